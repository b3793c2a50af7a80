// Writes Phi-4-mini's chat template (the one its GGUF files carry, as Hugging Face's
// @huggingface/ollama-utils package records it for library/phi4-mini) to OUT. llama.cpp's
// source ships no Phi-4-mini template, and the model hubs are out of reach.
// Usage: NODE_PATH=... node phi4_mini_template.js OUT
'use strict';
const fs = require('fs');
const path = require('path');

// The package exports only its code (dist/index.js); the table is in its source.
const root = path.dirname(path.dirname(require.resolve('@huggingface/ollama-utils')));
const source = fs.readFileSync(path.join(root, 'src', 'chat-template-automap.ts'), 'utf8');
const entry = /model: "library\/phi4-mini:3\.8b",\s*gguf: ("(?:[^"\\]|\\.)*")/.exec(source);
if (!entry) {
  console.error('phi4_mini_template: no library/phi4-mini entry in @huggingface/ollama-utils');
  process.exit(1);
}
const template = JSON.parse(entry[1]);
if (!template.includes("message['tools']") || !template.includes('<|/tool|>')) {
  console.error(`phi4_mini_template: unexpected template: ${template}`);
  process.exit(1);
}
fs.writeFileSync(process.argv[2], template);
