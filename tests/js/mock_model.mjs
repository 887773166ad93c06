#!/usr/bin/env node
// A mock Chat Completions endpoint for the board's model-agent scenario (board.mjs). It listens on
// a port the system picks (no window in which another socket can take a port chosen earlier) and
// prints that port on its first line of output, then serves until it is killed.
//
// Usage: node mock_model.mjs
import http from 'node:http';

// The mock model: first it completes the plan's first step (after a pause, so the page shows
// it pending first), then it asks to spawn a sub-task (a tool that needs approval), then it
// answers with whatever the tool result said.
function serveMock() {
  const reply = (message) => ({
    model: 'mock-1',
    choices: [{ message }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  const call = (id, name, args) => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', async () => {
      const messages = JSON.parse(body).messages ?? [];
      const made = messages.reduce((n, m) => n + (m.tool_calls?.length ?? 0), 0);
      const mcp = messages.some((m) => m.role === 'user' && JSON.stringify(m.content ?? '').includes('echo it'));
      let answer;
      if (mcp && made === 0) {
        // The MCP scenario: the official test server's echo, which needs a person's approval.
        answer = reply({ role: 'assistant', content: null, tool_calls: [call('e0', 'everything__echo', { message: 'hello from the board' })] });
      } else if (mcp) {
        const last = [...messages].reverse().find((m) => m.role === 'tool')?.content ?? '';
        answer = reply({ role: 'assistant', content: `the echo said: ${last}` });
      } else if (made === 0) {
        await new Promise((r) => setTimeout(r, 2500));
        answer = reply({ role: 'assistant', content: null, tool_calls: [call('c0', 'complete_step', { step: 'Build', output: 'built in 3 minutes' })] });
      } else if (made === 1) {
        answer = reply({ role: 'assistant', content: null, tool_calls: [call('c1', 'spawn_subtask', { name: 'Deploy', goal: 'deploy to prod' })] });
      } else {
        const last = [...messages].reverse().find((m) => m.role === 'tool')?.content ?? '';
        answer = reply({ role: 'assistant', content: `finished; the deploy: ${last}` });
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const server = await serveMock();
console.log(server.address().port);
