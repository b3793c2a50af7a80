// One conversation turn through the official `openai` npm client, streamed, as a stateless
// client sends it: the whole history (HISTORY_WORDS deterministic words, then TURN earlier
// questions and the answers the server gave, read back from STATE_FILE) and a new question.
// Prints one JSON line: time to first token measured here, prompt and cached tokens from the
// usage the server reports; appends this turn's answer to STATE_FILE for the next call.
// Usage: node bench_turn_ttft.js HTTP_PORT LABEL STATE_FILE
//   env: HISTORY_WORDS (3000), MAX_TOKENS (16), MODEL_NAME (llama-3.2-1b-shape)
'use strict';
const fs = require('fs');
const OpenAI = require('openai');

const [port, label, stateFile] = process.argv.slice(2);
const HISTORY_WORDS = Number(process.env.HISTORY_WORDS || 3000);
const MAX_TOKENS = Number(process.env.MAX_TOKENS || 16);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none',
  maxRetries: 0, timeout: 600000 });

function history() {
  const words = ('the report lists every order shipped this quarter with its invoice number '
    + 'customer region carrier weight and the date it was delivered or returned').split(' ');
  let state = 777;
  const out = [];
  for (let i = 0; i < HISTORY_WORDS; ++i) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out.push(words[state % words.length]);
  }
  return out.join(' ');
}

async function main() {
  const turns = fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) : [];
  let prompt = history();
  for (const t of turns) prompt += `\nQ: ${t.question}\nA:${t.answer}`;
  const question = `question ${turns.length + 1}: which orders were returned?`;
  prompt += `\nQ: ${question}\nA:`;
  const start = process.hrtime.bigint();
  let ttft = null;
  let answer = '';
  let usage = null;
  const stream = await client.completions.create({ model: process.env.MODEL_NAME || 'llama-3.2-1b-shape', prompt, max_tokens: MAX_TOKENS,
    temperature: 0, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    if (chunk.choices && chunk.choices.length && chunk.choices[0].text) {
      if (ttft === null) ttft = Number(process.hrtime.bigint() - start) / 1e6;
      answer += chunk.choices[0].text;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  turns.push({ question, answer });
  fs.writeFileSync(stateFile, JSON.stringify(turns));
  console.log(JSON.stringify({ label, turn: turns.length, ttft_ms: Number(ttft.toFixed(1)),
    prompt_tokens: usage.prompt_tokens,
    cached_tokens: usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : 0 }));
}

main().catch((e) => { console.error(e); process.exit(1); });
