// An agent-style load through the official `openai` npm client, stateless as SDKs and agent
// frameworks send it: CONVERSATIONS run at once, each TURNS turns; every request resends the
// whole history after one shared system prompt (SYSTEM_WORDS words) and the same tools, and
// streams its answer. Reports the wall time of the whole load, prompt and cached tokens
// (textgen: usage.prompt_tokens_details.cached_tokens; llama-server: timings.cache_n), time to
// first token and inter-token latency percentiles, and with METRICS_PORT the peak of
// textgen's KV gauges sampled every 50 ms during the load. Prints one JSON line.
// Usage: node bench_prefix_cache.js HTTP_PORT MODEL_NAME LABEL
//   env: CONVERSATIONS (4), TURNS (4), SYSTEM_WORDS (900), MAX_TOKENS (32), METRICS_PORT
'use strict';
const OpenAI = require('openai');

const [port, model, label] = process.argv.slice(2);
const CONVERSATIONS = Number(process.env.CONVERSATIONS || 4);
const TURNS = Number(process.env.TURNS || 4);
const SYSTEM_WORDS = Number(process.env.SYSTEM_WORDS || 900);
const MAX_TOKENS = Number(process.env.MAX_TOKENS || 32);
const METRICS_PORT = process.env.METRICS_PORT;
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none',
  maxRetries: 0, timeout: 600000 });

// A deterministic system prompt of ordinary words (a few hundred distinct sentences).
function systemPrompt() {
  const words = ('the agent must always check the account status before it answers any '
    + 'question about billing refunds orders shipping returns invoices and customer data it '
    + 'should never reveal internal notes and must escalate disputes to a human reviewer when '
    + 'the amount is large or the customer asks for a manager').split(' ');
  let state = 12345;
  const out = ['You are a careful support agent. Follow these rules.'];
  for (let i = 0; i < SYSTEM_WORDS; ++i) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out.push(words[state % words.length] + ((i % 17 === 16) ? '.' : ''));
  }
  return out.join(' ');
}

const TOOLS = [
  { type: 'function', function: { name: 'lookup_order', description: 'Find an order by id',
    parameters: { type: 'object', properties: { order_id: { type: 'string' } },
      required: ['order_id'] } } },
  { type: 'function', function: { name: 'refund', description: 'Refund part of an order',
    parameters: { type: 'object', properties: { order_id: { type: 'string' },
      amount: { type: 'number' } }, required: ['order_id', 'amount'] } } },
];

function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

// Peaks of the KV gauges, and KV bytes in use once every first turn is decoding (each
// request then holds its prompt: shared blocks once, its own suffix, its reservation).
let firstTurnsDecoding = 0;
async function sampleMetrics(peaks, stop) {
  while (!stop.done) {
    try {
      const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
      for (const name of ['textgen_kv_cache_bytes_used', 'textgen_kv_cache_blocks_shared']) {
        const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
        if (m) peaks[name] = Math.max(peaks[name] || 0, Number(m[1]));
        if (m && name === 'textgen_kv_cache_bytes_used' && peaks.all_decoding === undefined
            && firstTurnsDecoding === CONVERSATIONS) {
          peaks.all_decoding = Number(m[1]);
        }
      }
    } catch (e) { /* the server may be busy; sample again */ }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main() {
  const system = systemPrompt();
  const ttft = [], itl = [];
  let promptTokens = 0, cachedTokens = 0, completionTokens = 0;
  async function conversation(c) {
    const messages = [{ role: 'system', content: system }];
    for (let t = 0; t < TURNS; ++t) {
      messages.push({ role: 'user',
        content: `Customer ${c}, message ${t}: where is my order ${1000 + c}-${t} and can I get a refund?` });
      const sent = performance.now();
      let first = null, last = null, text = '';
      const stream = await client.chat.completions.create({ model, messages, tools: TOOLS,
        max_tokens: MAX_TOKENS, temperature: 0, stream: true,
        stream_options: { include_usage: true } });
      let cachedDetail = null, cacheN = null;
      for await (const chunk of stream) {
        const now = performance.now();
        const delta = chunk.choices && chunk.choices.length ? chunk.choices[0].delta : null;
        if (delta && (delta.content || delta.tool_calls)) {
          if (first === null) ttft.push(now - sent); else itl.push(now - last);
          if (first === null && t === 0) ++firstTurnsDecoding;
          if (first === null) first = now;
          last = now;
          text += delta.content || '';
        }
        if (chunk.usage) {
          promptTokens += chunk.usage.prompt_tokens;
          completionTokens += chunk.usage.completion_tokens;
          const details = chunk.usage.prompt_tokens_details;
          if (details && details.cached_tokens !== undefined) cachedDetail = details.cached_tokens;
        }
        if (chunk.timings && chunk.timings.cache_n !== undefined) cacheN = chunk.timings.cache_n;
      }
      cachedTokens += cachedDetail ?? cacheN ?? 0;
      messages.push({ role: 'assistant', content: text });
    }
  }
  const peaks = {};
  const stop = { done: false };
  const sampler = METRICS_PORT ? sampleMetrics(peaks, stop) : Promise.resolve();
  const start = performance.now();
  await Promise.all(Array.from({ length: CONVERSATIONS }, (_, c) => conversation(c)));
  const seconds = (performance.now() - start) / 1000;
  stop.done = true;
  await sampler;
  const round = (x) => (x === null ? null : Math.round(x * 10) / 10);
  console.log(JSON.stringify({ label, conversations: CONVERSATIONS, turns: TURNS,
    wall_seconds: Math.round(seconds * 100) / 100, prompt_tokens: promptTokens,
    cached_tokens: cachedTokens,
    cached_ratio: Math.round((cachedTokens / Math.max(promptTokens, 1)) * 1000) / 1000,
    completion_tokens: completionTokens,
    ttft_ms_p50: round(percentile(ttft, 0.5)), ttft_ms_p99: round(percentile(ttft, 0.99)),
    itl_ms_p50: round(percentile(itl, 0.5)), itl_ms_p99: round(percentile(itl, 0.99)),
    ...(METRICS_PORT ? { peak_kv_bytes_used: peaks.textgen_kv_cache_bytes_used,
      peak_kv_blocks_shared: peaks.textgen_kv_cache_blocks_shared,
      kv_bytes_used_all_first_turns_decoding: peaks.all_decoding } : {}) }));
}

main().catch((e) => { console.error(e); process.exit(1); });
