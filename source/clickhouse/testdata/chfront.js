// chfront: ClickHouse's HTTP interface, for plain SQL, in front of chDB
// (the ClickHouse engine as a library; npm chdb), for tailscope's tests.
//
//   node chfront.js DATA_DIR     prints the port it listens on (127.0.0.1)
//
// POST a query (the body; a ?query= parameter goes before it), get the
// result in the query's FORMAT (TabSeparated when it names none), as
// ClickHouse answers: 200 with the result, or an error status with the
// exception's text and X-ClickHouse-Exception-Code. Users: CHFRONT_USER
// (default "default") with the password CHFRONT_KEY (default none), sent
// as X-ClickHouse-User/X-ClickHouse-Key or basic auth. Tests only.
'use strict';
const http = require('http');
const zlib = require('zlib');
const { Session } = require('chdb');

const user = process.env.CHFRONT_USER || 'default';
const key = process.env.CHFRONT_KEY || '';
const session = new Session(process.argv[2]);

// ClickHouse's HTTP statuses for its exception codes (HTTPHandler.cpp's
// exceptionCodeToHTTPStatus, the ones tests meet).
function statusOf(code) {
  if ([516, 192, 193, 194].includes(code)) return 401;
  if (code === 497) return 403;
  if ([60, 81, 46].includes(code)) return 404;
  if ([62, 47, 16, 27, 43, 53, 36].includes(code)) return 400;
  return 500;
}

function fail(res, status, code, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(code) });
  res.end(text.endsWith('\n') ? text : text + '\n');
}

function failed(res, e) {
  const m = String((e && e.message) || e).replace(/^Query failed: /, '');
  const code = +((/Code: (\d+)/.exec(m) || [])[1] || 0);
  fail(res, statusOf(code), code, m);
}

// headerLength is the length of a RowBinaryWithNames(AndTypes) header:
// a count, then that many strings, lists times.
function headerLength(b, lists) {
  let i = 0;
  const uvarint = () => {
    let x = 0, s = 0;
    while (i < b.length) {
      const c = b[i++];
      x += (c & 0x7f) * 2 ** s;
      if (c < 0x80) return x;
      s += 7;
    }
    return -1;
  };
  const n = uvarint();
  for (let k = 0; n >= 0 && k < n * lists && i <= b.length; k++) {
    const l = uvarint();
    if (l < 0) return -1;
    i += l;
  }
  return n < 0 || i > b.length ? -1 : i;
}

// stream answers a SELECT chunk by chunk, as ClickHouse does: an error
// before the first chunk is the answer's status; one after it ends the
// body with the exception's text.
async function stream(q, res) {
  const format = (/\bFORMAT\s+(\w+)\s*$/i.exec(q) || [])[1] || 'TabSeparated';
  let started = false;
  let w = null;
  // chDB repeats a RowBinaryWith… header in every chunk; ClickHouse
  // writes it once.
  const withHeader = /^RowBinaryWith/i.test(format);
  let header = null;
  try {
    for await (const chunk of session.queryStream(q, { format })) {
      let b = Buffer.from(chunk.raw());
      if (withHeader) {
        if (header === null) {
          const n = headerLength(b, /AndTypes$/i.test(format) ? 2 : 1);
          if (n > 0) header = Buffer.from(b.subarray(0, n));
        } else if (b.length >= header.length && b.subarray(0, header.length).equals(header)) {
          b = b.subarray(header.length);
        }
      }
      if (!started) {
        w = open(res);
        started = true;
      }
      if (!w.write(b)) await new Promise((r) => w.once('drain', r));
    }
  } catch (e) {
    if (!started) return failed(res, e);
    w.end(String((e && e.message) || e) + '\n');
    return;
  }
  if (!started) w = open(res);
  w.end();
}

// open starts a 200 answer and returns what to write it to: res, or a
// gzip stream into it.
function open(res) {
  res.writeHead(200, Object.assign({ 'Content-Type': 'text/plain; charset=UTF-8' }, res.gzip ? { 'Content-Encoding': 'gzip' } : {}));
  if (!res.gzip) return res;
  const z = zlib.createGzip({ level: 1 });
  z.pipe(res);
  return z;
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let u = req.headers['x-clickhouse-user'] || 'default';
    let k = req.headers['x-clickhouse-key'] || '';
    const basic = /^Basic (.+)$/.exec(req.headers.authorization || '');
    if (basic) {
      const s = Buffer.from(basic[1], 'base64').toString();
      const i = s.indexOf(':');
      u = s.slice(0, i); k = s.slice(i + 1);
    }
    if (u !== user || k !== key) {
      return fail(res, 401, 516, `Code: 516. DB::Exception: ${u}: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)`);
    }
    const url = new URL(req.url, 'http://x');
    let q = url.searchParams.get('query') || '';
    if (req.method === 'POST') q += (q ? '\n' : '') + Buffer.concat(chunks).toString();
    if (!q.trim()) return fail(res, 400, 0, 'Empty query');
    // enable_http_compression=1 and Accept-Encoding: gzip: a gzip answer.
    res.gzip = url.searchParams.get('enable_http_compression') === '1' && /\bgzip\b/.test(req.headers['accept-encoding'] || '');
    if (/^\s*(SELECT|WITH)\b/i.test(q)) return stream(q, res);
    let out;
    try {
      out = session.query(q, 'TabSeparated');
    } catch (e) {
      return failed(res, e);
    }
    const w = open(res);
    w.end(out);
  });
}).listen(0, '127.0.0.1', function () {
  process.stdout.write(this.address().port + '\n');
});
