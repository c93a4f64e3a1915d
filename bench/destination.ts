/**
 * The third party of the proxy scenarios: answers every request with a small JSON body, as a payment
 * API would. The bench calls it directly and through the proxy, alternately, to measure the proxy.
 */
import { createServer } from 'node:http';

const answer = JSON.stringify({ id: 'ch_bench', status: 'succeeded', amount: 1299 });

createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer));
}).listen(Number(process.env.PORT ?? 4300), '127.0.0.1');
