// The official MCP test server (@modelcontextprotocol/server-everything) in Streamable HTTP mode
// on 127.0.0.1:PORT: it binds every interface of its own accord, so its listen is held to
// loopback here. Usage: node everything_loopback.mjs PORT
import http from 'node:http';

const port = process.argv[2] || '3001';
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  const done = args.find((a) => typeof a === 'function');
  return listen.call(this, Number(port), '127.0.0.1', done);
};
process.env.PORT = port;
process.argv = [process.argv[0], 'mcp-server-everything', 'streamableHttp'];
await import('@modelcontextprotocol/server-everything/dist/index.js');
