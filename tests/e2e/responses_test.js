// The Responses API (POST /v1/responses) with the official `openai` npm client, on random-weight
// models in Qwen 3 (hermes calls, <think>) and Llama 3.1 (llama3-json) layouts with their
// real vocabularies and templates. For each model:
//   - a plain response: object, usage, output_text as the SDK reads it;
//   - streamed responses (plain and with a required call) are OpenAI's event sequence
//     (numbered from 0, created first, completed/incomplete last, deltas adding up to the
//     items) and end with exactly the object a non-streamed request returns for that seed;
//     the SDK's responses.stream() helper assembles the same object;
//   - function tools round-trip: a required call (arguments validated by ajv), its output
//     sent back with previous_response_id (the prefix cache hits), and the same history sent
//     statelessly as items gives the same reply;
//   - text.format json_schema answers validate with ajv;
//   - retrieve and delete; errors name their parameter.
// Usage: node responses_test.js SERVER_BIN MODEL_GGUF...
'use strict';
const assert = require('assert');
const OpenAI = require('openai');
const Ajv2020 = require('ajv/dist/2020');
const { startServer } = require('./start_server');

const SEEDS = Number(process.env.RESPONSES_SEEDS || 12);

const TOOLS = [
  { type: 'function', name: 'get_weather', description: 'Weather in a city', strict: true,
    parameters: { type: 'object', properties: {
      city: { type: 'string', minLength: 1, maxLength: 12 } },
    required: ['city'], additionalProperties: false } },
  { type: 'function', name: 'add', description: 'Adds two integers', strict: true,
    parameters: { type: 'object', properties: {
      a: { type: 'integer', minimum: -100, maximum: 100 },
      b: { type: 'integer', minimum: -100, maximum: 100 } },
    required: ['a', 'b'], additionalProperties: false } },
];
const CITY = { type: 'object', properties: {
  name: { type: 'string', maxLength: 20 },
  population: { type: 'integer', minimum: 0, maximum: 100000000 } },
required: ['name', 'population'], additionalProperties: false };
const QUESTION = 'What is 2 + 3, and the weather in Oslo?';

// A response without what differs between two requests for the same reply: ids, times, and
// how much of the prompt the prefix cache held.
function comparable(response) {
  const copy = JSON.parse(JSON.stringify(response));
  delete copy.id;
  delete copy.created_at;
  if (copy.usage) {
    delete copy.usage.input_tokens_details.cached_tokens;
    delete copy.usage.constraint;  // compile time, and whether the grammar cache had it
  }
  delete copy.output_text;  // the SDK's convenience properties
  delete copy.output_parsed;
  for (const item of copy.output) {
    delete item.id;
    for (const part of item.content || []) delete part.parsed;  // the stream helper's
    delete item.parsed_arguments;
  }
  return copy;
}

async function streamed(client, params) {
  const stream = await client.responses.create({ ...params, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  events.forEach((event, i) => assert.strictEqual(event.sequence_number, i, event.type));
  assert.strictEqual(events[0].type, 'response.created');
  assert.strictEqual(events[0].response.status, 'in_progress');
  const last = events[events.length - 1];
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  // The deltas add up to the final items.
  const final = last.response;
  const texts = {};
  const args = {};
  let items = 0;
  for (const event of events) {
    if (event.type === 'response.output_text.delta') {
      texts[event.output_index] = (texts[event.output_index] || '') + event.delta;
    } else if (event.type === 'response.function_call_arguments.delta') {
      args[event.output_index] = (args[event.output_index] || '') + event.delta;
    } else if (event.type === 'response.output_item.added') {
      assert.strictEqual(event.output_index, items++);
    }
  }
  final.output.forEach((item, i) => {
    if (item.type === 'message') assert.strictEqual(texts[i] || '', item.content[0].text);
    if (item.type === 'function_call') assert.strictEqual(args[i] || '', item.arguments);
  });
  return final;
}

async function checkModel(serverBin, modelPath, ajv) {
  const { server, httpPort, modelName } = await startServer(serverBin, modelPath,
    ['--threads', '1', '--max-batch', '8']);
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: 'none',
    maxRetries: 0 });
  const validators = Object.fromEntries(TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
  const stats = { calls: 0, roundTrips: 0, schemaAnswers: 0 };
  try {
    // --- snippet used in docs/api.md (Responses) ---
    const response = await client.responses.create({
      model: modelName, instructions: 'Answer briefly.', input: 'Say hello.',
      max_output_tokens: 24, seed: 1 });
    // --- end of snippet ---
    assert.strictEqual(response.object, 'response');
    assert.match(response.id, /^resp_[0-9a-f]{32}$/);
    assert.ok(['completed', 'incomplete'].includes(response.status));
    assert.strictEqual(response.instructions, 'Answer briefly.');
    assert.strictEqual(typeof response.output_text, 'string');
    assert.strictEqual(response.output[0].type, 'message');
    assert.strictEqual(response.output_text, response.output[0].content[0].text);
    assert.ok(response.usage.input_tokens > 0);
    assert.strictEqual(response.usage.total_tokens,
      response.usage.input_tokens + response.usage.output_tokens);

    // Streamed == non-streamed, plain and with a required call.
    for (let seed = 1; seed <= 3; ++seed) {
      for (const extra of [{}, { tools: TOOLS, tool_choice: 'required' }]) {
        const params = { model: modelName, input: QUESTION, seed, temperature: 1,
          max_output_tokens: 80, ...extra };
        const whole = await client.responses.create(params);
        const final = await streamed(client, params);
        assert.deepStrictEqual(comparable(final), comparable(whole));
        const helper = await client.responses.stream(params).finalResponse();
        assert.deepStrictEqual(comparable(helper), comparable(whole));
      }
    }

    // Function tools round-trip, through the store and statelessly.
    for (let seed = 1; seed <= SEEDS; ++seed) {
      const first = await client.responses.create({ model: modelName, input: QUESTION,
        tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, seed,
        temperature: 1, max_output_tokens: 120 });
      const calls = first.output.filter((item) => item.type === 'function_call');
      if (first.status !== 'completed') continue;  // cut by max_output_tokens
      assert.ok(calls.length >= 1, JSON.stringify(first.output));
      for (const call of calls) {
        ++stats.calls;
        assert.match(call.call_id, /^call_[A-Za-z0-9]{24}$/);
        const valid = validators[call.name](JSON.parse(call.arguments));
        assert.ok(valid, `${call.name} ${call.arguments}: ` +
          JSON.stringify(validators[call.name].errors));
      }
      const outputs = calls.map((call) => ({ type: 'function_call_output', call_id: call.call_id,
        output: call.name === 'add' ? '5' : 'sunny' }));
      const next = { model: modelName, tools: TOOLS, seed: 100 + seed, temperature: 1,
        max_output_tokens: 12 };
      const second = await client.responses.create({ ...next, previous_response_id: first.id,
        input: outputs });
      assert.strictEqual(second.previous_response_id, first.id);
      assert.ok(second.usage.input_tokens_details.cached_tokens > 0,
        'the continuation reused the first turn\'s KV from the prefix cache');
      const stateless = await client.responses.create({ ...next, store: false,
        input: [{ role: 'user', content: QUESTION }, ...first.output, ...outputs] });
      assert.strictEqual(stateless.usage.input_tokens, second.usage.input_tokens);
      assert.deepStrictEqual(comparable(stateless).output, comparable(second).output);
      ++stats.roundTrips;
    }
    assert.ok(stats.roundTrips >= SEEDS / 3, `only ${stats.roundTrips} round trips completed`);

    // Structured output through text.format.
    const validateCity = ajv.compile(CITY);
    for (let seed = 1; seed <= SEEDS; ++seed) {
      const r = await client.responses.create({ model: modelName, input: 'A large city?', seed,
        temperature: 1, max_output_tokens: 200,
        text: { format: { type: 'json_schema', name: 'city', schema: CITY, strict: true } } });
      if (r.status !== 'completed') continue;
      assert.ok(validateCity(JSON.parse(r.output_text)), r.output_text);
      ++stats.schemaAnswers;
    }
    assert.ok(stats.schemaAnswers >= 1, 'no schema answer completed');

    // Retrieve and delete; a deleted response cannot be continued.
    const stored = await client.responses.create({ model: modelName, input: 'Hi', seed: 5,
      max_output_tokens: 8 });
    const retrieved = await client.responses.retrieve(stored.id);
    assert.deepStrictEqual(comparable(retrieved), comparable(stored));
    assert.strictEqual(retrieved.id, stored.id);
    await client.responses.delete(stored.id);
    await assert.rejects(client.responses.retrieve(stored.id), OpenAI.NotFoundError);
    await assert.rejects(client.responses.create({ model: modelName, input: 'Hi',
      previous_response_id: stored.id }),
    (e) => e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id');
    const unstored = await client.responses.create({ model: modelName, input: 'Hi',
      store: false, max_output_tokens: 4 });
    await assert.rejects(client.responses.retrieve(unstored.id), OpenAI.NotFoundError);

    // What textgen does not offer is refused by name.
    await assert.rejects(client.responses.create({ model: modelName, input: 'Hi',
      tools: [{ type: 'web_search_preview' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools' &&
      /hosted/.test(e.message));
    await assert.rejects(client.responses.create({ model: modelName, input: [{ role: 'user',
      content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input[0].content[0]');
    await assert.rejects(client.responses.create({ model: modelName, input: 'Hi',
      tools: TOOLS, tool_choice: { type: 'function', name: 'mul' } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.name');
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
  }
  console.log(`${modelName}: ${stats.calls} calls validated, ${stats.roundTrips} round trips, ` +
    `${stats.schemaAnswers} schema answers`);
}

async function main() {
  const [serverBin, ...models] = process.argv.slice(2);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  for (const model of models) await checkModel(serverBin, model, ajv);
  console.log('responses: OK');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
