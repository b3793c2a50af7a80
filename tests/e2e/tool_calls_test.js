// Tool calls through the HTTP API with the official `openai` npm client, on random-weight
// models in Qwen 2.5 (hermes), Qwen 3 (hermes, <think>), Qwen3.5 (qwen3-coder's XML parameters,
// a hybrid recurrent model, its prompt opening <think>), Llama 3.1 (llama3-json), Mistral-Nemo
// (mistral, [TOOL_CALLS]), Phi-4-mini (phi4-mini, <|tool_call|>; its template shows tools
// only in a system message and renders no calls), gpt-oss (harmony: a call is a message to
// the tool, after the model's analysis) and LFM2.5 (lfm2: a list of Python calls between control
// tokens; a hybrid of short convolutions and attention) layouts with their vocabularies and templates. For
// each model:
//   - named and required calls over seeds 1..N: every reply that finishes with "tool_calls"
//     names a declared tool and its arguments validate with ajv against that tool's schema;
//     no format markup in `content`;
//   - auto replies over the same seeds: no markup in `content` either;
//   - a streamed call, reassembled from its deltas, equals the non-streamed one (same seed),
//     and the stream helper's finalChatCompletion() gives it too;
//   - the SDK's runTools helper runs real JavaScript functions and sends their results back
//     (the call ids and tool messages round-trip through the template), with a session that
//     reuses the cached prefix across the turn;
//   - the prompt shows the model its tools (longer than with tool_choice none);
//   - bad tool_choice / tools / tool messages are 400s naming the parameter.
// Usage: node tool_calls_test.js SERVER_BIN MODEL_GGUF...
'use strict';
const assert = require('assert');
const OpenAI = require('openai');
const { startServer } = require('./start_server');
const Ajv2020 = require('ajv/dist/2020');

const SEEDS = Number(process.env.TOOL_SEEDS || 100);
const MARKUP = new RegExp('<tool_call>|</tool_call>|<function=|</?parameter|\\[TOOL_CALLS\\]|<\\|python_tag\\|>|<think>|</think>|' +
  '<\\|/?tool_call\\|>|<\\|(start|channel|message|constrain|end)\\|>');

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: {
      city: { type: 'string', minLength: 1, maxLength: 12 },
      unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city'], additionalProperties: false } } },
  { type: 'function', function: { name: 'add', description: 'Adds two integers',
    parameters: { type: 'object', properties: {
      a: { type: 'integer', minimum: -100, maximum: 100 },
      b: { type: 'integer', minimum: -100, maximum: 100 } },
    required: ['a', 'b'], additionalProperties: false } } },
];

// Per model: Qwen3.5's prompt opens <think>, and a forced call waits for the model to close it,
// which random weights never do; with thinking off the prompt closes it and the call is
// constrained from the first token (the thinking path is ChatOutputParserTest's and
// ToolPlanTest's).
const EXTRA = { 'qwen3.5-random': { reasoning_effort: 'none' } };

// Runs `count` requests made by `make(i)`, 8 at a time.
async function batched(count, make) {
  const out = [];
  for (let start = 1; start <= count; start += 8) {
    const batch = [];
    for (let i = start; i < start + 8 && i <= count; ++i) batch.push(make(i));
    out.push(...await Promise.all(batch));
  }
  return out;
}

async function checkModel(serverBin, modelPath, validators) {
  const { server, httpPort, modelName } = await startServer(serverBin, modelPath,
    ['--threads', '1', '--max-batch', '8']);
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: 'none',
    maxRetries: 0 });
  const counts = { calls: 0, length: 0, invalid: 0, leaks: 0, auto: 0 };
  const extra = EXTRA[modelName] || {};
  const messages = [{ role: 'user', content: 'What is 2 + 3, and the weather in Oslo?' }];
  const check = (label, choice) => {
    if (choice.message.content && MARKUP.test(choice.message.content)) {
      ++counts.leaks;
      console.error(`${modelName} ${label}: markup in content: ${choice.message.content}`);
    }
    if (choice.finish_reason === 'length') {
      ++counts.length;
      return;
    }
    if (choice.finish_reason !== 'tool_calls' || !choice.message.tool_calls?.length) {
      ++counts.invalid;
      console.error(`${modelName} ${label}: finished with ${choice.finish_reason}, no calls`);
      return;
    }
    for (const call of choice.message.tool_calls) {
      ++counts.calls;
      assert.strictEqual(call.type, 'function');
      assert.match(call.id, /^(call_[A-Za-z0-9]{24}|[A-Za-z0-9]{9})$/);
      const validate = validators[call.function.name];
      let args;
      try {
        args = JSON.parse(call.function.arguments);
      } catch (e) {
        args = undefined;
      }
      if (!validate || args === undefined || !validate(args)) {
        ++counts.invalid;
        console.error(`${modelName} ${label}: bad call ${JSON.stringify(call)} ` +
          `${JSON.stringify(validate && validate.errors)}`);
      }
    }
  };
  try {
    // Named and required calls: constrained from the first token.
    for (const [label, tool_choice] of [
      ['named', { type: 'function', function: { name: 'add' } }], ['required', 'required']]) {
      await batched(SEEDS, (seed) => client.chat.completions.create({
        model: modelName, ...extra, seed, temperature: 1, max_tokens: 120, messages, tools: TOOLS,
        tool_choice }).then((r) => {
        check(`${label} seed ${seed}`, r.choices[0]);
        if (label === 'named' && r.choices[0].finish_reason === 'tool_calls') {
          assert.strictEqual(r.choices[0].message.tool_calls.length, 1);
          assert.strictEqual(r.choices[0].message.tool_calls[0].function.name, 'add');
        }
      }));
    }
    // Auto: whatever the model writes, no markup reaches content.
    await batched(SEEDS, (seed) => client.chat.completions.create({
      model: modelName, ...extra, seed, max_tokens: 40, messages, tools: TOOLS }).then((r) => {
      ++counts.auto;
      const content = r.choices[0].message.content || '';
      if (MARKUP.test(content)) {
        ++counts.leaks;
        console.error(`${modelName} auto seed ${seed}: markup in content: ${content}`);
      }
    }));
    // Streamed calls equal the non-streamed ones for the same seed.
    for (let seed = 1; seed <= 5; ++seed) {
      const params = { model: modelName, ...extra, seed, temperature: 1, max_tokens: 120, messages,
        tools: TOOLS, tool_choice: 'required' };
      const whole = (await client.chat.completions.create(params)).choices[0];
      const stream = await client.chat.completions.create({ ...params, stream: true });
      const calls = [];
      let finish = null;
      for await (const chunk of stream) {
        if (!chunk.choices.length) continue;
        const delta = chunk.choices[0].delta;
        assert.ok(!delta.content || !MARKUP.test(delta.content), delta.content);
        for (const d of delta.tool_calls || []) {
          if (!calls[d.index]) {
            assert.ok(d.id && d.type === 'function' && d.function.name, JSON.stringify(d));
            calls[d.index] = { id: d.id, name: d.function.name, arguments: '' };
          }
          calls[d.index].arguments += d.function.arguments || '';
        }
        finish = chunk.choices[0].finish_reason || finish;
      }
      assert.strictEqual(finish, whole.finish_reason);
      // Byte for byte (a call cut by max_tokens included).
      const expected = (whole.message.tool_calls || []).map((c) => [c.function.name,
        c.function.arguments]);
      assert.deepStrictEqual(calls.map((c) => [c.name, c.arguments]), expected);
      const helper = client.chat.completions.stream(params);
      const final = await helper.finalChatCompletion();
      assert.deepStrictEqual((final.choices[0].message.tool_calls || []).map((c) =>
        [c.function.name, c.function.arguments]), expected);
    }
    // runTools: real functions; their results go back as tool messages (ids round-trip), in a
    // session whose second completion reuses the first turn's KV cache.
    const used = new Set();
    const functions = {
      add: ({ a, b }) => { used.add('add'); return String(a + b); },
      get_weather: ({ city }) => { used.add('get_weather'); return `sunny in ${city}`; },
    };
    let cut = 0;
    for (let seed = 1; seed <= 30 && used.size < 2; ++seed) {
      const runner = client.chat.completions.runTools({
        model: modelName, ...extra, seed, temperature: 1, max_tokens: 400, messages,
        tool_choice: 'required', parallel_tool_calls: false, session_id: `tools-${seed}`,
        tools: TOOLS.map((t) => ({ type: 'function', function: { name: t.function.name,
          description: t.function.description, parameters: t.function.parameters,
          parse: JSON.parse, function: functions[t.function.name] } })),
      }, { maxChatCompletions: 2 });
      const completions = [];
      runner.on('chatCompletion', (c) => completions.push(c));
      // A first reply cut by max_tokens has no call to run (a random gpt-oss can reason on):
      // the SDK refuses it, and the next seed is tried.
      try {
        await runner.done();
      } catch (e) {
        if (e?.constructor?.name !== 'LengthFinishReasonError' || completions.length > 1) throw e;
        ++cut;
        continue;
      }
      assert.strictEqual(completions.length, 2, 'two completions: a call, then after results');
      const toolMessages = runner.messages.filter((m) => m.role === 'tool');
      assert.ok(toolMessages.length >= 1, 'tool results went back');
      assert.ok(completions[1].usage.prompt_tokens_details.cached_tokens > 0,
        'the second turn reused the session');
    }
    assert.strictEqual(used.size, 2, `runTools called both functions (${cut} first replies cut)`);
    // The template shows the model its tools (Phi-4-mini's only through a system message):
    // offering them makes the prompt longer than tool_choice none, which withholds them.
    const promptTokens = async (extra) => (await client.chat.completions.create({
      model: modelName, ...extra, messages, tools: TOOLS, max_tokens: 1, ...extra })).usage.prompt_tokens;
    const offered = await promptTokens({});
    const withheld = await promptTokens({ tool_choice: 'none' });
    assert.ok(offered > withheld + 40, `tools offered: ${offered} prompt tokens, none: ${withheld}`);
    // Bad requests name the parameter.
    await assert.rejects(client.chat.completions.create({ model: modelName, ...extra, messages,
      tools: TOOLS, tool_choice: { type: 'function', function: { name: 'mul' } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.function.name');
    await assert.rejects(client.chat.completions.create({ model: modelName, ...extra, messages,
      tool_choice: 'required' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice');
    await assert.rejects(client.chat.completions.create({ model: modelName, ...extra, tools: TOOLS,
      messages: [...messages, { role: 'tool', tool_call_id: 'nope', content: '5' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages' &&
      /tool_call_id/.test(e.message));
    await assert.rejects(client.chat.completions.create({ model: modelName, ...extra, messages,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object',
        properties: { x: { not: {} } } } } }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools' &&
      /properties\/x\/not/.test(e.message));
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
  }
  console.log(`${modelName}: ${counts.calls} calls in replies finished with tool_calls, ` +
    `${counts.length} cut by max_tokens, ${counts.invalid} invalid, ${counts.leaks} markup ` +
    `leaks (${counts.auto} auto replies)`);
  assert.strictEqual(counts.invalid, 0, 'every call validates');
  assert.strictEqual(counts.leaks, 0, 'no markup in content');
  assert.ok(counts.calls >= SEEDS, 'enough calls finished to mean something');
}

async function main() {
  const [serverBin, ...models] = process.argv.slice(2);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  const validators = Object.fromEntries(TOOLS.map((t) =>
    [t.function.name, ajv.compile(t.function.parameters)]));
  for (const model of models) await checkModel(serverBin, model, validators);
  console.log('tool calls: OK');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
