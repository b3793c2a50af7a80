// End-to-end test of textgen-server's HTTP API with the official `openai` npm client, the one
// most tools use. Starts the real server on the bundled model with one running slot and one
// queue slot, and checks:
//   completions and chat, streaming and not, agree with each other and with the gRPC path
//   (textgen generate); usage with cached prompt tokens (session_id); logprobs; a stop string;
//   each error as the SDK's error class and status (400, 404, 413, 429, 503); a stream aborted
//   with AbortController frees its slot (textgen_running_requests in /metrics back to 0,
//   textgen_requests_total{code="CANCELLED"} up); SIGTERM drains and exits 0. Then, on a server
//   with --api-keys-file: a wrong key is an AuthenticationError, sessions belong to their
//   principal (no cached tokens leak across principals), SIGHUP reloads the keys.
// Usage: node openai_client_test.js SERVER_BIN CLIENT_BIN MODEL_GGUF
'use strict';
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const OpenAI = require('openai');
const { startServer: startTextgen } = require('./start_server');

// The server as this test runs it: one sequence, a queue of one, small requests.
function startServer(binary, model, extraArgs = []) {
  return startTextgen(binary, model, ['--threads', '1', '--max-batch', '1', '--max-queue', '1',
    '--max-request-bytes', '65536', '--drain-timeout', '20s', ...extraArgs], 'all');
}

async function metric(port, name) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

async function expectError(promise, ErrorClass, status, check = () => {}) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ErrorClass, `expected ${ErrorClass.name}, got ${error}`);
    assert.strictEqual(error.status, status);
    check(error);
    return error;
  }
  assert.fail(`expected ${ErrorClass.name} (${status})`);
}

async function collect(stream) {
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.text ?? choice.delta?.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage };
}

async function main() {
  const [serverBin, clientBin, model] = process.argv.slice(2);
  const { server, httpPort, grpcPort, metricsPort, modelName } = await startServer(serverBin, model);
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  // --- snippet used in README (OpenAI-compatible HTTP API) ---
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: 'unused',
    maxRetries: 0 });
  // --- end of snippet ---
  try {
    const models = await client.models.list();
    assert.deepStrictEqual(models.data.map((m) => m.id), [modelName]);

    // Completions: the same greedy text over HTTP (both ways) as over gRPC.
    const prompt = 'Once upon a time';
    const completion = await client.completions.create({
      model: modelName, prompt, max_tokens: 24, temperature: 0 });
    const text = completion.choices[0].text;
    assert.strictEqual(completion.object, 'text_completion');
    assert.strictEqual(completion.choices[0].finish_reason, 'length');
    assert.strictEqual(completion.usage.completion_tokens, 24);
    assert.ok(completion.usage.prompt_tokens > 0);
    const grpcText = execFileSync(clientBin, ['generate', '--addr', `127.0.0.1:${grpcPort}`,
      '--temperature', '0', '--max-tokens', '24', prompt]).toString();
    assert.strictEqual(text, grpcText, 'HTTP and gRPC disagree on the same request');
    const streamed = await collect(await client.completions.create({
      model: modelName, prompt, max_tokens: 24, temperature: 0, stream: true,
      stream_options: { include_usage: true } }));
    assert.strictEqual(streamed.text, text);
    assert.strictEqual(streamed.finish, 'length');
    assert.strictEqual(streamed.usage.completion_tokens, 24);

    // A stop string cuts the text where it first appears.
    const stop = text.slice(8, 12);
    const stopped = await client.completions.create({
      model: modelName, prompt, max_tokens: 24, temperature: 0, stop: [stop] });
    assert.strictEqual(stopped.choices[0].text, text.slice(0, text.indexOf(stop)));
    assert.strictEqual(stopped.choices[0].finish_reason, 'stop');

    // Chat, seeded sampling: streaming and not give the same tokens.
    const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
    const chat = await client.chat.completions.create({
      model: modelName, messages, max_tokens: 16, temperature: 0.8, seed: 7 });
    assert.strictEqual(chat.object, 'chat.completion');
    assert.strictEqual(chat.choices[0].message.role, 'assistant');
    const chatStreamed = await collect(await client.chat.completions.create({
      model: modelName, messages, max_tokens: 16, temperature: 0.8, seed: 7, stream: true }));
    assert.strictEqual(chatStreamed.text, chat.choices[0].message.content);
    assert.strictEqual(chatStreamed.finish, chat.choices[0].finish_reason);

    // Logprobs: one entry per token; greedy picks the most likely; the bytes spell the text.
    const withLogprobs = await client.chat.completions.create({
      model: modelName, messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = withLogprobs.choices[0].logprobs.content;
    assert.strictEqual(content.length, withLogprobs.usage.completion_tokens);
    for (const entry of content) {
      assert.strictEqual(entry.top_logprobs.length, 3);
      assert.ok(entry.logprob <= 0);
      assert.strictEqual(entry.top_logprobs[0].token, entry.token);
      assert.strictEqual(entry.top_logprobs[0].logprob, entry.logprob);
      for (let i = 1; i < 3; ++i) {
        assert.ok(entry.top_logprobs[i].logprob <= entry.top_logprobs[i - 1].logprob);
      }
    }
    const bytes = Buffer.from(content.flatMap((entry) => entry.bytes));
    assert.strictEqual(bytes.toString('utf8'), withLogprobs.choices[0].message.content);

    // The prefix cache: these messages were sent above, so every full 16-token block of the
    // prompt before its last token (which is computed for its logits) comes from the cache.
    const first = await client.chat.completions.create({
      model: modelName, messages, max_tokens: 8, temperature: 0, session_id: 'openai-e2e' });
    assert.strictEqual(first.usage.prompt_tokens_details.cached_tokens,
      Math.floor((first.usage.prompt_tokens - 1) / 16) * 16);
    // A session: the second turn reuses the first turn's KV cache.
    const second = await client.chat.completions.create({
      model: modelName, max_tokens: 8, temperature: 0, session_id: 'openai-e2e',
      messages: [...messages, first.choices[0].message, { role: 'user', content: 'And then?' }] });
    assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0,
      `expected cached tokens, got ${JSON.stringify(second.usage)}`);
    // Stateless (no session id), the same history still starts from the cache, and the
    // answer is the same tokens.
    const stateless = await client.chat.completions.create({
      model: modelName, max_tokens: 8, temperature: 0,
      messages: [...messages, first.choices[0].message, { role: 'user', content: 'And then?' }] });
    assert.ok(stateless.usage.prompt_tokens_details.cached_tokens >= 16,
      `expected cached tokens, got ${JSON.stringify(stateless.usage)}`);
    assert.strictEqual(stateless.choices[0].message.content, second.choices[0].message.content);

    // Errors, each as the SDK's class.
    await expectError(client.completions.create({ model: modelName, prompt, temperature: -1 }),
      OpenAI.BadRequestError, 400, (e) => assert.strictEqual(e.param, 'temperature'));
    await expectError(client.chat.completions.create({ model: 'gpt-4o', messages }),
      OpenAI.NotFoundError, 404, (e) => assert.strictEqual(e.code, 'model_not_found'));
    await expectError(client.completions.create({ model: modelName, prompt: 'x'.repeat(70000) }),
      OpenAI.APIError, 413);
    await expectError(client.completions.create({ model: modelName, prompt, n: 17 }),
      OpenAI.BadRequestError, 400, (e) => assert.strictEqual(e.param, 'n'));
    await expectError(client.completions.create({ model: modelName, prompt, n: 2,
      session_id: 'one' }), OpenAI.BadRequestError, 400, (e) => assert.strictEqual(e.param, 'n'));
    // Three choices do not fit a queue of one: refused whole (the first, already queued, is
    // dropped at the engine's next step), and the server goes on.
    await expectError(client.completions.create({ model: modelName, prompt, n: 3 }),
      OpenAI.RateLimitError, 429);
    for (const start = Date.now(); ;) {
      try {
        const after = await client.completions.create({ model: modelName, prompt, max_tokens: 2 });
        assert.strictEqual(after.choices.length, 1);
        break;
      } catch (error) {
        assert.ok(error instanceof OpenAI.RateLimitError, `${error}`);
        assert.ok(Date.now() - start < 2000, 'the refused choices stay queued');
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    // One running (its first chunk arrived), one queued, the third is turned away.
    const long = { model: modelName, prompt, max_tokens: 200, ignore_eos: true };
    const runningStream = await client.completions.create({ ...long, stream: true });
    const iterator = runningStream[Symbol.asyncIterator]();
    await iterator.next();
    const results = await Promise.allSettled([client.completions.create(long),
      client.completions.create(long)]);
    const rejected = results.filter((r) => r.status === 'rejected');
    assert.strictEqual(rejected.length, 1, JSON.stringify(results.map((r) => r.status)));
    assert.ok(rejected[0].reason instanceof OpenAI.RateLimitError, `${rejected[0].reason}`);
    assert.strictEqual(rejected[0].reason.status, 429);
    while (!(await iterator.next()).done) { /* the running stream completes */ }

    // A stream aborted by the client frees its slot within a step.
    const cancelledBefore = await metric(metricsPort, 'textgen_requests_total{code="CANCELLED"}');
    const controller = new AbortController();
    const aborted = await client.completions.create({ ...long, stream: true },
      { signal: controller.signal });
    let chunks = 0;
    try {
      for await (const chunk of aborted) {
        if (++chunks === 2) controller.abort();  // the SDK ends the iteration (or throws)
      }
    } catch (error) {
      assert.ok(error instanceof OpenAI.APIUserAbortError, `unexpected ${error}`);
    }
    // Chunks already received may still be delivered; the other ~190 must not be.
    assert.ok(chunks < 50, `the stream went on after abort(): ${chunks} chunks`);
    const abortedAt = Date.now();
    while (await metric(metricsPort, 'textgen_running_requests') !== 0) {
      assert.ok(Date.now() - abortedAt < 2000, 'the aborted stream still runs after 2 s');
      await new Promise((r) => setTimeout(r, 5));
    }
    const freedMs = Date.now() - abortedAt;
    assert.strictEqual(
      await metric(metricsPort, 'textgen_requests_total{code="CANCELLED"}'), cancelledBefore + 1);
    console.log(`aborted stream: slot free ${freedMs} ms after AbortController.abort()`);

    // Draining: /health turns 503 at once, a new request gets 503, the running stream finishes.
    const draining = await client.completions.create({ ...long, max_tokens: 240, stream: true,
      logprobs: 20 });
    const drainingIterator = draining[Symbol.asyncIterator]();
    await drainingIterator.next();
    server.kill('SIGTERM');
    while ((await fetch(`http://127.0.0.1:${httpPort}/health`)).status !== 503) { /* poll */ }
    await expectError(client.completions.create({ model: modelName, prompt }),
      OpenAI.InternalServerError, 503, (e) => assert.match(e.message, /draining|shutting down/));
    let last = null;
    for (let next = await drainingIterator.next(); !next.done; next = await drainingIterator.next()) {
      last = next.value;
    }
    assert.strictEqual(last.choices[0].finish_reason, 'length');
  } catch (error) {
    server.kill('SIGKILL');
    throw error;
  }
  assert.strictEqual(await exited, 0);
  await apiKeys(serverBin, model);
  await choices(serverBin, model);
  console.log('openai client e2e: PASS');
}

// n choices: choice i is the request sampled with seed + i, streamed or not; the prompt is
// computed once (the other choices take it from the prefix cache) and counted once in usage.
// Then embeddings on the same server (several inputs need queue room).
async function choices(serverBin, model) {
  const { server, httpPort, metricsPort, modelName } = await startServer(serverBin, model,
    ['--max-batch', '8', '--max-queue', '32']);
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: 'unused',
    maxRetries: 0 });
  try {
    const prompt = 'Once upon a time there was a little girl who lived in a village near the '
      + 'forest. Every day she walked to the river to see the fish, and every evening she told '
      + 'her mother what she had seen. One day something new was waiting by the water.';
    const base = { model: modelName, prompt, max_tokens: 12, temperature: 0.9, seed: 7 };
    const computedBefore = await metric(metricsPort, 'textgen_prefill_tokens_total');
    const four = await client.completions.create({ ...base, n: 4 });
    const computed = await metric(metricsPort, 'textgen_prefill_tokens_total') - computedBefore;
    assert.deepStrictEqual(four.choices.map((c) => c.index), [0, 1, 2, 3]);
    const promptTokens = four.usage.prompt_tokens;
    assert.ok(computed <= promptTokens + 3 * 16,
      `the prompt (${promptTokens} tokens) was computed more than once: ${computed} tokens`);
    let completionTokens = 0;
    for (let i = 0; i < 4; ++i) {
      const alone = await client.completions.create({ ...base, seed: 7 + i });
      assert.strictEqual(four.choices[i].text, alone.choices[0].text, `choice ${i}`);
      assert.strictEqual(alone.usage.prompt_tokens, promptTokens);
      completionTokens += alone.usage.completion_tokens;
    }
    assert.strictEqual(four.usage.completion_tokens, completionTokens);
    assert.ok(new Set(four.choices.map((c) => c.text)).size > 1, 'four identical samples');

    // best_of 4, n 2: the two candidates (seeds 7..10) with the highest mean token
    // log-probability, best first, without logprobs unless asked; usage counts all four.
    const best = await client.completions.create({ ...base, n: 2, best_of: 4 });
    const candidates = [];
    for (let i = 0; i < 4; ++i) {
      const c = (await client.completions.create({ ...base, seed: 7 + i, logprobs: 0 }))
        .choices[0];
      const lp = c.logprobs.token_logprobs;
      candidates.push({ text: c.text, mean: lp.reduce((a, b) => a + b, 0) / lp.length });
    }
    const ranked = candidates.map((c, i) => ({ ...c, i }))
      .sort((a, b) => b.mean - a.mean || a.i - b.i);
    assert.deepStrictEqual(best.choices.map((c) => [c.index, c.text]),
      [[0, ranked[0].text], [1, ranked[1].text]]);
    assert.strictEqual(best.choices[0].logprobs, null);
    assert.strictEqual(best.usage.completion_tokens, completionTokens);

    // Chat, streamed: each chunk names its choice; one usage chunk at the end.
    const messages = [{ role: 'user', content: 'Tell me a story about a dog.' }];
    const chat = { model: modelName, messages, max_tokens: 10, temperature: 0.8, seed: 3, n: 3 };
    const whole = await client.chat.completions.create(chat);
    const texts = ['', '', ''];
    let usage = null;
    let finishes = 0;
    for await (const chunk of await client.chat.completions.create({ ...chat, stream: true,
      stream_options: { include_usage: true } })) {
      if (chunk.usage) {
        assert.strictEqual(usage, null, 'two usage chunks');
        usage = chunk.usage;
      }
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta?.content ?? '';
        if (choice.finish_reason) finishes += 1;
      }
    }
    assert.strictEqual(finishes, 3);
    assert.deepStrictEqual(texts, whole.choices.map((c) => c.message.content));
    assert.strictEqual(usage.completion_tokens, whole.usage.completion_tokens);

    // Embeddings: the SDK asks for base64 and decodes it; the float form is the same numbers,
    // each input's vector is the same alone and with others, normalized to length 1.
    const inputs = ['Once upon a time', 'The end.', prompt];
    const viaBase64 = await client.embeddings.create({ model: modelName, input: inputs });
    const asFloat = await client.embeddings.create({ model: modelName, input: inputs,
      encoding_format: 'float' });
    assert.strictEqual(viaBase64.object, 'list');
    assert.deepStrictEqual(viaBase64.data.map((d) => d.index), [0, 1, 2]);
    assert.deepStrictEqual(viaBase64.data.map((d) => d.embedding),
      asFloat.data.map((d) => d.embedding));
    const single = await client.embeddings.create({ model: modelName, input: inputs[1],
      encoding_format: 'float' });
    assert.deepStrictEqual(single.data[0].embedding, asFloat.data[1].embedding);
    for (const { embedding } of asFloat.data) {
      const norm = Math.sqrt(embedding.reduce((sum, v) => sum + v * v, 0));
      assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
    }
    assert.ok(asFloat.usage.prompt_tokens > 0);
    assert.strictEqual(asFloat.usage.total_tokens, asFloat.usage.prompt_tokens);
    const short = await client.embeddings.create({ model: modelName, input: inputs[0],
      dimensions: 8, encoding_format: 'float' });
    assert.strictEqual(short.data[0].embedding.length, 8);
    await expectError(client.embeddings.create({ model: modelName, input: [''] }),
      OpenAI.BadRequestError, 400, (e) => assert.strictEqual(e.param, 'input'));
  } catch (error) {
    server.kill('SIGKILL');
    throw error;
  }
  server.kill('SIGTERM');
  assert.strictEqual(await exited, 0);
}

// With --api-keys-file: a wrong key is the SDK's AuthenticationError, and a session belongs to
// its principal: bob sending alice's session id and her exact conversation gets no cached
// tokens (nothing about her cache leaks), while alice's own next turn does. SIGHUP swaps the
// keys without cutting a running stream.
async function apiKeys(serverBin, model) {
  const keysFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'textgen-keys-')), 'keys');
  fs.writeFileSync(keysFile, 'alice alice-key-0123456789\nbob bob-key-0123456789\n');
  const { server, httpPort, modelName } = await startServer(serverBin, model,
    ['--api-keys-file', keysFile]);
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  const as = (apiKey) => new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey,
    maxRetries: 0 });
  try {
    await expectError(as('not-a-key-of-anyone').models.list(), OpenAI.AuthenticationError, 401);
    assert.strictEqual((await fetch(`http://127.0.0.1:${httpPort}/health`)).status, 200);
    const alice = as('alice-key-0123456789');
    const bob = as('bob-key-0123456789');
    const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
    const first = await alice.chat.completions.create({
      model: modelName, messages, max_tokens: 8, temperature: 0, session_id: 'shared' });
    const next = [...messages, first.choices[0].message, { role: 'user', content: 'And then?' }];
    const probe = await bob.chat.completions.create({
      model: modelName, messages: next, max_tokens: 8, temperature: 0, session_id: 'shared' });
    assert.strictEqual(probe.usage.prompt_tokens_details.cached_tokens, 0,
      'bob saw cached tokens of alice\'s session');
    const own = await alice.chat.completions.create({
      model: modelName, messages: next, max_tokens: 8, temperature: 0, session_id: 'shared' });
    assert.ok(own.usage.prompt_tokens_details.cached_tokens > 0);
    assert.strictEqual(own.choices[0].message.content, probe.choices[0].message.content);

    // SIGHUP re-reads the keys; a stream already running is not disturbed.
    const running = await alice.completions.create({ model: modelName, prompt: 'Once',
      max_tokens: 200, ignore_eos: true, stream: true });
    const iterator = running[Symbol.asyncIterator]();
    await iterator.next();
    fs.writeFileSync(keysFile, 'carol carol-key-0123456789\n');
    server.kill('SIGHUP');
    const carol = as('carol-key-0123456789');
    const reloadedAt = Date.now();
    for (;;) {
      try {
        await carol.models.list();
        break;
      } catch (error) {
        assert.ok(error instanceof OpenAI.AuthenticationError, `${error}`);
        assert.ok(Date.now() - reloadedAt < 5000, 'the keys were not reloaded within 5 s');
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await expectError(alice.models.list(), OpenAI.AuthenticationError, 401);
    let last = null;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      last = next.value;
    }
    assert.strictEqual(last.choices[0].finish_reason, 'length');
  } catch (error) {
    server.kill('SIGKILL');
    throw error;
  }
  server.kill('SIGTERM');
  assert.strictEqual(await exited, 0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
