// A grpc-js client for policy/grpcjs_consumer_test.go.
//
//   node client.js ADDR CONFIG.json /pkg.Service/Method...
//
// It loads CONFIG.json, a gRPC service config as tailscope writes it, as
// the channel's "grpc.service_config" option (the file's text as it is),
// waits for the channel to connect, then calls every method at once with
// an empty message, no deadline and no other option, and prints one JSON
// line per call: {"method", "ms", "code", "details", "start", "lag"}. ms
// is measured around the call alone (node's startup and the connection do
// not count); start is the call's start on the wall clock (ms since the
// epoch), so that the test can tell a header sent late from a config
// misread; lag is the most the event loop ran late while the calls were
// out (a loaded machine delays the callbacks that measure ms).
// A config grpc-js refuses is printed as {"error"} with exit status 2.
'use strict';

const fs = require('fs');
const grpc = require('@grpc/grpc-js');

const [addr, configFile, ...methods] = process.argv.slice(2);
if (!addr || !configFile || methods.length === 0) {
  console.error('usage: node client.js ADDR CONFIG.json /pkg.Service/Method...');
  process.exit(64);
}

const codeName = {};
for (const [name, code] of Object.entries(grpc.status)) {
  codeName[code] = name;
}

let client;
try {
  const config = fs.readFileSync(configFile, 'utf8');
  client = new grpc.Client(addr, grpc.credentials.createInsecure(), {
    'grpc.service_config': config,
  });
} catch (err) {
  console.log(JSON.stringify({ error: String(err && err.message || err) }));
  process.exit(2);
}

const identity = (b) => b;

const { performance } = require('perf_hooks');

// The event loop's lateness: a 5 ms timer that notes how late it fires.
let lag = 0;
let last = performance.now();
const ticker = setInterval(() => {
  const now = performance.now();
  lag = Math.max(lag, now - last - 5);
  last = now;
}, 5);

function call(method) {
  return new Promise((resolve) => {
    const wall = performance.timeOrigin + performance.now();
    const start = process.hrtime.bigint();
    client.makeUnaryRequest(method, identity, identity, Buffer.alloc(0), new grpc.Metadata(), {}, (err) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      const code = err ? err.code : grpc.status.OK;
      resolve({ method, ms, code: codeName[code] || String(code), details: err ? err.details : '', start: wall });
    });
  });
}

client.waitForReady(Date.now() + 10000, async (err) => {
  if (err) {
    console.log(JSON.stringify({ error: 'channel not ready: ' + err.message }));
    process.exit(3);
  }
  const results = await Promise.all(methods.map(call));
  clearInterval(ticker);
  for (const r of results) {
    r.lag = lag;
    console.log(JSON.stringify(r));
  }
  client.close();
});
