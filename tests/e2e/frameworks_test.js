// The agent and LLM frameworks people run, unchanged, against textgen-server's HTTP API on a
// random-weight model in Qwen 3's layout (its real vocabulary and template): the model cannot
// decide to call a tool by itself, so each check forces the first call (tool_choice required,
// constrained by the tool's schema) and lets the framework run its loop from there.
//   - OpenAI Agents SDK (@openai/agents): an agent with a function tool runs to completion,
//     through the Responses API and through Chat Completions; the tool ran with arguments that
//     validate, its output went back, the run ended with its structured final output;
//   - LangChain.js (@langchain/openai): ChatOpenAI bindTools (a forced call parsed into
//     tool_calls), withStructuredOutput (a zod object parsed from a json_schema reply);
//   - Vercel AI SDK (ai + @ai-sdk/openai-compatible): generateText with a tool (called, result
//     fed back, a second step), streamText (text streamed, usage reported), generateObject;
//   - Codex CLI (@openai/codex) with textgen as a custom provider (wire_api "responses"):
//     `codex exec --output-schema` runs a turn end to end (its ~5,400-token prompt, its
//     function tools, a streamed structured answer) and exits 0; a second run finds the
//     prompt in the prefix cache.
// Usage: node frameworks_test.js SERVER_BIN MODEL_GGUF CODEX_BIN
'use strict';
const assert = require('assert');
const OpenAI = require('openai');
const { z } = require('zod');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { startServer } = require('./start_server');

const QUESTION = 'What is the weather in Oslo?';

async function openAiAgents(baseURL, modelName) {
  const agents = require('@openai/agents');
  agents.setTracingDisabled(true);  // no traces to OpenAI's servers
  const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0 });
  for (const [api, Model] of [['responses', agents.OpenAIResponsesModel],
    ['chat_completions', agents.OpenAIChatCompletionsModel]]) {
    const calls = [];
    const getWeather = agents.tool({
      name: 'get_weather', description: 'Weather in a city',
      parameters: z.object({ city: z.string().min(1).max(12) }),
      execute: async ({ city }) => {
        calls.push(city);
        return `sunny in ${city}`;
      },
    });
    const agent = new agents.Agent({
      name: 'Forecaster', instructions: 'Use the tool, then answer in one sentence.',
      tools: [getWeather], model: new Model(client, modelName),
      // The first turn must call the tool; the SDK resets tool_choice after a call, so the
      // second turn answers: in a structured output (text.format json_schema), which a random
      // model completes within max_tokens (the SDK fails a response that max_tokens cuts).
      outputType: z.object({ forecast: z.string().max(16) }),
      modelSettings: { toolChoice: 'required', parallelToolCalls: false, maxTokens: 200,
        temperature: 1, providerData: { seed: 3 } },
    });
    const result = await agents.run(agent, QUESTION, { maxTurns: 4 });
    const types = result.newItems.map((item) => item.type);
    assert.ok(types.includes('tool_call_item'), `${api}: no tool call in ${types}`);
    assert.ok(types.includes('tool_call_output_item'), `${api}: no tool output in ${types}`);
    assert.strictEqual(calls.length, 1, `${api}: the tool ran once`);
    const chars = [...calls[0]].length;  // code points, as JSON Schema counts them
    assert.ok(chars >= 1 && chars <= 12, calls[0]);
    assert.strictEqual(typeof result.finalOutput.forecast, 'string', `${api}: no final output`);
    assert.strictEqual(types[types.length - 1], 'message_output_item');
    console.log(`@openai/agents (${api}): ${types.join(' -> ')}; ` +
      `tool ran with ${JSON.stringify(calls[0])}`);
  }
}

async function langChain(baseURL, modelName) {
  const { ChatOpenAI } = require('@langchain/openai');
  const llm = new ChatOpenAI({ model: modelName, apiKey: 'none', maxRetries: 0, temperature: 1,
    maxTokens: 120, configuration: { baseURL }, modelKwargs: { seed: 3 } });
  const weather = { type: 'function', function: { name: 'get_weather',
    description: 'Weather in a city', parameters: { type: 'object',
      properties: { city: { type: 'string', minLength: 1, maxLength: 12 } },
      required: ['city'], additionalProperties: false } } };
  const bound = llm.bindTools([weather], { tool_choice: 'required' });
  const message = await bound.invoke(QUESTION);
  assert.strictEqual(message.tool_calls.length >= 1, true, JSON.stringify(message));
  assert.strictEqual(message.tool_calls[0].name, 'get_weather');
  assert.strictEqual(typeof message.tool_calls[0].args.city, 'string');

  const City = z.object({ name: z.string().max(20), population: z.number().int().min(0) });
  let parsed = 0;
  for (let seed = 1; seed <= 4 && parsed === 0; ++seed) {
    const structured = new ChatOpenAI({ model: modelName, apiKey: 'none', maxRetries: 0,
      temperature: 1, maxTokens: 200, configuration: { baseURL },
      modelKwargs: { seed } }).withStructuredOutput(City, { method: 'jsonSchema' });
    try {
      const city = await structured.invoke('A large city?');
      assert.ok(City.safeParse(city).success, JSON.stringify(city));
      ++parsed;
    } catch (e) {
      if (!/length|max_tokens|parse/i.test(String(e))) throw e;  // cut off: try another seed
    }
  }
  assert.ok(parsed >= 1, 'withStructuredOutput never completed');
  console.log(`@langchain/openai: bindTools -> ${JSON.stringify(message.tool_calls[0].args)}; ` +
    'withStructuredOutput parsed');
}

async function vercelAi(baseURL, modelName) {
  const ai = require('ai');
  const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
  const provider = createOpenAICompatible({ name: 'textgen', baseURL, apiKey: 'none',
    supportsStructuredOutputs: true, includeUsage: true });
  const model = provider(modelName);
  const cities = [];
  const result = await ai.generateText({
    model, prompt: QUESTION, maxOutputTokens: 200, temperature: 1, seed: 3, maxRetries: 0,
    tools: { get_weather: ai.tool({ description: 'Weather in a city',
      inputSchema: z.object({ city: z.string().min(1).max(12) }),
      execute: async ({ city }) => { cities.push(city); return `sunny in ${city}`; } }) },
    // Forced on the first step only; the second step answers with the result.
    prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
    stopWhen: ai.stepCountIs(2),
  });
  assert.strictEqual(result.steps.length, 2,
    JSON.stringify(result.steps.map((s) => [s.finishReason, s.text, s.toolCalls])));
  assert.strictEqual(result.steps[0].toolCalls.length >= 1, true);
  assert.strictEqual(result.steps[0].toolResults[0].output, `sunny in ${cities[0]}`);
  assert.strictEqual(typeof result.text, 'string');

  const stream = ai.streamText({ model, prompt: 'Tell me a story.', maxOutputTokens: 16,
    temperature: 0, maxRetries: 0 });
  let streamedText = '';
  for await (const delta of stream.textStream) streamedText += delta;
  const usage = await stream.usage;
  assert.strictEqual(usage.outputTokens, 16);
  assert.strictEqual(streamedText, await stream.text);
  const whole = await ai.generateText({ model, prompt: 'Tell me a story.', maxOutputTokens: 16,
    temperature: 0, maxRetries: 0 });
  assert.strictEqual(streamedText, whole.text, 'greedy text streamed equals non-streamed');

  const City = z.object({ name: z.string().max(20), population: z.number().int().min(0) });
  let objects = 0;
  for (let seed = 1; seed <= 4 && objects === 0; ++seed) {
    try {
      const { object } = await ai.generateObject({ model, schema: City, prompt: 'A large city?',
        maxOutputTokens: 200, temperature: 1, seed, maxRetries: 0 });
      assert.ok(City.safeParse(object).success, JSON.stringify(object));
      ++objects;
    } catch (e) {
      if (!ai.NoObjectGeneratedError || !ai.NoObjectGeneratedError.isInstance(e)) throw e;
    }
  }
  assert.ok(objects >= 1, 'generateObject never completed');
  console.log(`ai: generateText called get_weather(${JSON.stringify(cities[0])}) and took a ` +
    `second step; streamText = generateText (${usage.outputTokens} tokens); generateObject ok`);
}

// Codex's config for a custom provider. Codex offers the model its hosted web_search and its
// sub-agent and goal tools (a "namespace" tool) unless told not to; textgen serves function
// tools only and refuses the others by name, so they are turned off here (docs/clients.md).
function codexConfig(baseURL, modelName) {
  return `model = "${modelName}"
model_provider = "textgen"
web_search = "disabled"

[features]
multi_agent = false
goals = false

[model_providers.textgen]
name = "textgen"
base_url = "${baseURL}"
wire_api = "responses"
`;
}

async function codexCli(baseURL, modelName, codexBin, metricsPort) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'textgen-codex-'));
  try {
    const workspace = path.join(home, 'workspace');
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(home, 'config.toml'), codexConfig(baseURL, modelName));
    const schema = { type: 'object', properties: { greeting: { type: 'string', maxLength: 16 } },
      required: ['greeting'], additionalProperties: false };
    fs.writeFileSync(path.join(home, 'schema.json'), JSON.stringify(schema));
    const answers = [];
    for (let run = 0; run < 2; ++run) {
      const last = path.join(home, `last-${run}.txt`);
      execFileSync(path.resolve(codexBin), ['exec', '--skip-git-repo-check', '--output-schema',
        path.join(home, 'schema.json'), '-o', last, 'Say hello'],
      { cwd: workspace, env: { ...process.env, CODEX_HOME: home, OPENAI_API_KEY: 'none' },
        stdio: ['ignore', 'ignore', 'pipe'], timeout: 120000 });
      const answer = JSON.parse(fs.readFileSync(last, 'utf8'));
      assert.strictEqual(typeof answer.greeting, 'string');
      assert.ok([...answer.greeting].length <= 16, answer.greeting);
      answers.push(answer);
    }
    const cached = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const hits = /^textgen_cached_tokens_total\{api="http"\} (\S+)$/m.exec(cached);
    assert.ok(hits && Number(hits[1]) > 5000, 'the second codex run reused the first\'s prompt');
    console.log(`codex exec: exit 0 twice, answers ${JSON.stringify(answers)}`);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

async function main() {
  const [serverBin, modelPath, codexBin] = process.argv.slice(2);
  const { server, httpPort, metricsPort, modelName } = await startServer(serverBin, modelPath,
    ['--threads', '1', '--max-batch', '8']);
  const baseURL = `http://127.0.0.1:${httpPort}/v1`;
  try {
    await openAiAgents(baseURL, modelName);
    await langChain(baseURL, modelName);
    await vercelAi(baseURL, modelName);
    await codexCli(baseURL, modelName, codexBin, metricsPort);
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
  }
  console.log('frameworks: OK');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
