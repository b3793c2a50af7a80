// Starts textgen-server with every listener on a free 127.0.0.1 port and resolves once it
// listens: { server, httpPort, grpcPort, metricsPort, modelName }. `args` go after the model
// and listener flags; `echo` 'all' copies every server line to stderr, 'problems' only
// warnings and errors. Shared by the HTTP end-to-end tests.
'use strict';
const readline = require('readline');
const { spawn } = require('child_process');

function startServer(binary, model, args, echo = 'problems') {
  const server = spawn(binary, ['--model', model, '--listen', '127.0.0.1:0',
    '--metrics-listen', '127.0.0.1:0', '--http-listen', '127.0.0.1:0', ...args],
  { stdio: ['ignore', 'inherit', 'pipe'] });
  return new Promise((resolve, reject) => {
    let resolved = false;
    readline.createInterface({ input: server.stderr }).on('line', (line) => {
      if (echo === 'all' || /level=(warning|error)/.test(line)) {
        process.stderr.write(`[server] ${line}\n`);
      }
      const http = /http_port=(\d+)/.exec(line);
      if (http && !resolved) {
        resolved = true;
        resolve({
          server,
          httpPort: Number(http[1]),
          grpcPort: Number(/grpc_port=(\d+)/.exec(line)[1]),
          metricsPort: Number(/metrics_port=(\d+)/.exec(line)[1]),
          modelName: /model=(\S+)/.exec(line)[1],
        });
      }
    });
    server.on('exit', (code) => { if (!resolved) reject(new Error(`server exited ${code}`)); });
  });
}

module.exports = { startServer };
