// Decode throughput of tool-calling chat requests against plain ones, through the HTTP API
// with the official `openai` npm client: rounds alternate plain / tool call at each stream
// count. Both send the same messages and tools (the same prompt, so the same prefill); the
// plain one leaves tool_choice auto (parsed, not constrained, in the llama3-json format) and
// asks for min_tokens, the tool call names the tool, whose arguments are a long array so the
// call does not end first: each request makes exactly MAX_TOKENS tokens. Tokens/s is
// completion tokens over the run's wall time (the prompts are the same, so is their prefill);
// inter-token latency is between chunks that carry output (a call's first chunk waits for its
// name, so the tokens before it show up as one longer gap), TTFT to the first such chunk.
// Prints one JSON line per run and the medians.
// Usage: node bench_tool_calls.js HTTP_PORT MODEL_NAME ROUNDS
'use strict';
const OpenAI = require('openai');

const [port, model, roundsArg] = process.argv.slice(2);
const ROUNDS = Number(roundsArg || 3);
const MAX_TOKENS = 64;
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0 });
const TOOLS = [{ type: 'function', function: { name: 'save_people', parameters: {
  type: 'object', properties: { people: { type: 'array', minItems: 40, items: { type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0, maximum: 120 },
      role: { enum: ['admin', 'user', 'guest'] } }, required: ['name', 'age', 'role'],
    additionalProperties: false } } }, required: ['people'], additionalProperties: false } } }];
const messages = [{ role: 'user', content: 'List forty people with their ages and roles.' }];

async function run(streams, requests, tools) {
  const itl = [], ttft = [];
  let tokens = 0;
  const start = performance.now();
  let next = 0;
  async function worker() {
    while (next < requests) {
      const seed = ++next;
      const params = { model, seed, max_tokens: MAX_TOKENS, messages, stream: true,
        stream_options: { include_usage: true }, tools: TOOLS };
      if (tools) {
        params.tool_choice = { type: 'function', function: { name: 'save_people' } };
      } else {
        params.min_tokens = MAX_TOKENS;
      }
      const sent = performance.now();
      let first = null, last = null;
      for await (const chunk of await client.chat.completions.create(params)) {
        const now = performance.now();
        const delta = chunk.choices.length ? chunk.choices[0].delta : null;
        if (delta && (delta.content || delta.tool_calls)) {
          if (first === null) {
            first = now;
            ttft.push(now - sent);
          } else {
            itl.push(now - last);
          }
          last = now;
        }
        if (chunk.usage) tokens += chunk.usage.completion_tokens;
      }
    }
  }
  await Promise.all(Array.from({ length: streams }, worker));
  const seconds = (performance.now() - start) / 1000;
  const pct = (v, p) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1,
    Math.floor(p * v.length))] || 0;
  return { streams, tools, tokens, seconds, tok_s: tokens / seconds,
    itl_p50_ms: pct(itl, 0.5), itl_p99_ms: pct(itl, 0.99), ttft_p50_ms: pct(ttft, 0.5) };
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

async function main() {
  await run(1, 1, false);  // warm-up
  for (const streams of [1, 16]) {
    const requests = streams === 1 ? 4 : 32;
    const plain = [], calls = [];
    for (let round = 1; round <= ROUNDS; ++round) {
      const a = await run(streams, requests, false);
      const b = await run(streams, requests, true);
      console.log(JSON.stringify({ round, plain: a, tool_call: b }));
      plain.push(a.tok_s);
      calls.push(b.tok_s);
    }
    const p = median(plain), c = median(calls);
    console.log(`streams ${streams}: median plain ${p.toFixed(2)} tok/s, tool call ` +
      `${c.toFixed(2)} tok/s, ratio ${(c / p).toFixed(3)}`);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
