// End-to-end test of textgen-server from Node.js (@grpc/grpc-js + @grpc/proto-loader).
// Starts the real server on stories260K on a free loopback port, streams a greedy generation
// and checks it against shared/models/stories260K/PROVENANCE.md, checks that temperature -1
// is INVALID_ARGUMENT, then SIGTERMs the server and expects exit code 0.
// Usage: node node_client_test.js SERVER_BIN PROTO_ROOT MODEL_GGUF
'use strict';
const assert = require('assert');
const path = require('path');
const readline = require('readline');
const { spawn } = require('child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const REFERENCE_TEXT = ', there was a little girl named Lily. She loved to play outside in the park. ' +
  'One day, she saw a big, red ball. She wanted to play with it,';

function startServer(binary, model) {
  const server = spawn(binary, ['--model', model, '--listen', '127.0.0.1:0', '--metrics-listen=',
    '--threads', '1', '--drain-timeout', '10s'], { stdio: ['ignore', 'inherit', 'pipe'] });
  return new Promise((resolve, reject) => {
    let port = null;
    readline.createInterface({ input: server.stderr }).on('line', (line) => {
      process.stderr.write(`[server] ${line}\n`);
      const match = /grpc_port=(\d+)/.exec(line);
      if (match && port === null) {
        port = Number(match[1]);
        resolve({ server, port });
      }
    });
    server.on('exit', (code) => { if (port === null) reject(new Error(`server exited ${code}`)); });
  });
}

// --- snippet used in docs/clients.md ---
function generate(client, request, metadata = new grpc.Metadata()) {
  return new Promise((resolve, reject) => {
    let text = '';
    let finished = null;
    const call = client.Generate(request, metadata, { deadline: Date.now() + 60000 });
    call.on('data', (response) => {
      text += response.text;
      if (response.finished) finished = response.finished;
    });
    call.on('error', reject);
    call.on('end', () => resolve({ text, finished }));
  });
}
// --- end of snippet ---

async function main() {
  const [binary, protoRoot, model] = process.argv.slice(2);
  const definition = protoLoader.loadSync(path.join(protoRoot, 'textgen/v1/textgen.proto'), {
    includeDirs: [protoRoot], longs: String, enums: String, defaults: true, oneofs: true,
  });
  const textgen = grpc.loadPackageDefinition(definition).textgen.v1;
  const { server, port } = await startServer(binary, model);
  const exited = new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  try {
    const client = new textgen.TextGeneration(`127.0.0.1:${port}`,
      grpc.credentials.createInsecure());
    const { text, finished } = await generate(client, {
      text: 'Once upon a time', sampling: { temperature: 0 }, stopping: { maxNewTokens: 48 },
    });
    assert.strictEqual(text, REFERENCE_TEXT);
    assert.strictEqual(finished.reason, 'FINISH_REASON_LENGTH');
    assert.strictEqual(finished.usage.completionTokens, 48);

    await assert.rejects(
      generate(client, { text: 'Once upon a time', sampling: { temperature: -1 } }),
      (error) => error.code === grpc.status.INVALID_ARGUMENT && /temperature/.test(error.details));
    client.close();

    // --- snippet used in docs/clients.md (sessions behind a load balancer) ---
    const retryPolicy = JSON.stringify({ methodConfig: [{
      name: [{ service: 'textgen.v1.TextGeneration' }],
      retryPolicy: { maxAttempts: 5, initialBackoff: '0.25s', maxBackoff: '2s',
        backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE', 'CANCELLED'] } }] });
    const balanced = new textgen.TextGeneration(`127.0.0.1:${port}`,
      grpc.credentials.createInsecure(), { 'grpc.service_config': retryPolicy });
    const session = 'conversation-42';
    const routing = new grpc.Metadata();
    routing.set('x-session-id', session);  // the balancer keeps the session on one replica
    let prompt = 'Once upon a time';
    let turn;
    for (let i = 0; i < 2; ++i) {
      turn = await generate(balanced,
        { text: prompt, sessionId: session, stopping: { maxNewTokens: 16 } }, routing);
      prompt += `${turn.text} Then`;
    }
    // --- end of snippet ---
    assert.ok(Number(turn.finished.usage.cachedTokens) > 0, 'the second turn reused nothing');
    const other = new grpc.Metadata();
    other.set('x-session-id', 'another');
    await assert.rejects(
      generate(balanced, { text: prompt, sessionId: session }, other),
      (error) => error.code === grpc.status.INVALID_ARGUMENT && /x-session-id/.test(error.details));
    balanced.close();
  } finally {
    server.kill('SIGTERM');
  }
  assert.strictEqual(await exited, 0, 'textgen-server should exit 0 after SIGTERM');
  console.log('node client e2e: OK');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
