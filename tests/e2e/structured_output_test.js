// Structured output through the HTTP API with the official `openai` npm client: for each model
// given and each schema below, seeds 1..N ask for response_format json_schema; every answer
// that finishes with "stop" must parse and validate with ajv (draft 2020-12 + ajv-formats);
// json_object answers must be JSON objects; a streamed answer validates too; bad schemas are
// 400s naming the keyword, and the server keeps serving.
// Usage: node structured_output_test.js SERVER_BIN MODEL_GGUF...
'use strict';
const assert = require('assert');
const OpenAI = require('openai');
const { startServer } = require('./start_server');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const SEEDS = Number(process.env.SEEDS || 10);

// Ordinary schemas: enums, bounded integers and strings, nested objects, arrays, $defs/$ref,
// anyOf, prefixItems, optional properties, formats.
const SCHEMAS = {
  enum: { type: 'object', properties: { mood: { enum: ['happy', 'sad', 'calm'] } },
    required: ['mood'], additionalProperties: false },
  bounded: { type: 'object', properties: {
    age: { type: 'integer', minimum: 0, maximum: 120 },
    name: { type: 'string', minLength: 1, maxLength: 8 } },
  required: ['age', 'name'], additionalProperties: false },
  nested: { type: 'object', properties: {
    user: { type: 'object', properties: { id: { type: 'integer', minimum: 1, maximum: 999 },
      tag: { type: 'string', maxLength: 6 } }, required: ['id', 'tag'],
    additionalProperties: false },
    active: { type: 'boolean' } }, required: ['user', 'active'], additionalProperties: false },
  array: { type: 'object', properties: { items: { type: 'array',
    items: { type: 'string', maxLength: 5 }, minItems: 1, maxItems: 3 } },
  required: ['items'], additionalProperties: false },
  defs: { $defs: { point: { type: 'object', properties: {
    x: { type: 'integer', minimum: -9, maximum: 9 }, y: { type: 'integer', minimum: -9, maximum: 9 } },
  required: ['x', 'y'], additionalProperties: false } },
  type: 'object', properties: { a: { $ref: '#/$defs/point' }, b: { $ref: '#/$defs/point' } },
  required: ['a', 'b'], additionalProperties: false },
  anyOf: { type: 'object', properties: { value: { anyOf: [{ type: 'null' },
    { type: 'integer', minimum: 0, maximum: 50 }, { type: 'string', maxLength: 4 }] } },
  required: ['value'], additionalProperties: false },
  prefixItems: { type: 'array', prefixItems: [{ type: 'string', maxLength: 4 },
    { type: 'integer', minimum: 0, maximum: 9 }, { type: 'boolean' }], items: false, minItems: 3 },
  optional: { type: 'object', properties: { title: { type: 'string', maxLength: 6 },
    year: { type: 'integer', minimum: 1900, maximum: 2100 }, good: { type: 'boolean' } },
  required: ['title'], additionalProperties: false },
  formats: { type: 'object', properties: { id: { type: 'string', format: 'uuid' },
    day: { type: 'string', format: 'date' } }, required: ['id', 'day'],
  additionalProperties: false },
};


async function checkModel(serverBin, modelPath, ajv) {
  const { server, httpPort, modelName } = await startServer(serverBin, modelPath,
    ['--threads', '1', '--max-batch', '8']);
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: 'none',
    maxRetries: 0 });
  const counts = { stop: 0, length: 0, invalid: 0 };
  try {
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const validate = ajv.compile(schema);
      const requests = [];
      for (let seed = 1; seed <= SEEDS; ++seed) {
        requests.push(client.chat.completions.create({
          model: modelName, seed, temperature: 1, max_tokens: 200,
          messages: [{ role: 'user', content: `Answer as JSON (${name}).` }],
          response_format: { type: 'json_schema', json_schema: { name, strict: true, schema } },
        }).then((r) => {
          const choice = r.choices[0];
          assert.ok(r.usage.constraint, 'usage reports the constraint');
          if (choice.finish_reason !== 'stop') {
            ++counts.length;
            return;
          }
          ++counts.stop;
          let parsed;
          try {
            parsed = JSON.parse(choice.message.content);
          } catch (e) {
            ++counts.invalid;
            console.error(`${modelName} ${name} seed ${seed}: not JSON: ${choice.message.content}`);
            return;
          }
          if (!validate(parsed)) {
            ++counts.invalid;
            console.error(`${modelName} ${name} seed ${seed}: ${JSON.stringify(validate.errors)}` +
              ` in ${choice.message.content}`);
          }
        }));
      }
      await Promise.all(requests);
    }
    // JSON mode.
    for (let seed = 1; seed <= SEEDS; ++seed) {
      const r = await client.chat.completions.create({ model: modelName, seed, max_tokens: 120,
        messages: [{ role: 'user', content: 'Any JSON object.' }],
        response_format: { type: 'json_object' } });
      if (r.choices[0].finish_reason === 'stop') {
        const value = JSON.parse(r.choices[0].message.content);
        assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value));
      }
    }
    // Streamed: the deltas make one valid answer.
    const stream = await client.chat.completions.create({ model: modelName, seed: 3,
      max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'JSON please' }],
      response_format: { type: 'json_schema',
        json_schema: { name: 'enum', strict: true, schema: SCHEMAS.enum } } });
    let text = '';
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.choices.length) {
        text += chunk.choices[0].delta.content || '';
        finish = chunk.choices[0].finish_reason || finish;
      }
    }
    if (finish === 'stop') assert.ok(ajv.compile(SCHEMAS.enum)(JSON.parse(text)), text);
    // Refusals name what they refuse; the server keeps serving.
    await assert.rejects(client.chat.completions.create({ model: modelName,
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'bad',
        schema: { type: 'object', properties: { a: { not: { type: 'string' } } } } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' &&
      /schema \/properties\/a\/not: keyword "not" is not supported/.test(e.message));
    await assert.rejects(client.chat.completions.create({ model: modelName,
      messages: [{ role: 'user', content: 'x' }], grammar: 'root ::= root "a"' }),
    (e) => e instanceof OpenAI.BadRequestError && /left recursion/.test(e.message));
    await assert.rejects(client.completions.create({ model: modelName, prompt: 'x',
      regex: '(a' }), (e) => e instanceof OpenAI.BadRequestError && /missing '\)'/.test(e.message));
    const ok = await client.completions.create({ model: modelName, prompt: 'Digits:', seed: 1,
      max_tokens: 40, regex: '[0-9]{3}-[0-9]{4}' });
    if (ok.choices[0].finish_reason === 'stop') {
      assert.match(ok.choices[0].text, /^[0-9]{3}-[0-9]{4}$/);
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
  }
  console.log(`${modelName}: ${counts.stop} answers finished with stop, ${counts.length} cut by ` +
    `max_tokens, ${counts.invalid} invalid`);
  assert.strictEqual(counts.invalid, 0, 'every finished answer validates');
  assert.ok(counts.stop >= Object.keys(SCHEMAS).length, 'enough answers finished to mean something');
}

async function main() {
  const [serverBin, ...models] = process.argv.slice(2);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  for (const model of models) await checkModel(serverBin, model, ajv);
  console.log('structured output: OK');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
