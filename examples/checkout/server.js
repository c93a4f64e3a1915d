/*
 * A merchant's checkout page for the card elements, on its own origin. Run:
 *   PORT=8080 VAULT_URL=http://localhost:3000 PUBLIC_KEY=key_pub_... APPLICATION_ID=... node server.js
 * The public application must list this page's origin (http://127.0.0.1:8080 or http://localhost:8080,
 * as you open it) in its allowed_origins.
 */
const http = require('node:http');
const fs = require('node:fs');

const PORT = Number(process.env.PORT || 8080);
const VAULT_URL = (process.env.VAULT_URL || 'http://localhost:3000').replace(/\/+$/, '');
const { PUBLIC_KEY, APPLICATION_ID } = process.env;
if (!PUBLIC_KEY || !APPLICATION_ID) {
  console.error('PUBLIC_KEY and APPLICATION_ID are required (a public application with token:create)');
  process.exit(1);
}

/** @param {string} text */
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = fs
  .readFileSync(require.resolve('./index.html'), 'utf8')
  .replaceAll('{{VAULT_URL}}', escapeHtml(VAULT_URL))
  .replaceAll('{{PUBLIC_KEY}}', escapeHtml(PUBLIC_KEY))
  .replaceAll('{{APPLICATION_ID}}', escapeHtml(APPLICATION_ID));
const script = fs.readFileSync(require.resolve('./checkout.js'));

// The page's own policy: scripts from here and from the vault, frames only from the vault.
const policy = [
  "default-src 'self'",
  `script-src 'self' ${VAULT_URL}`,
  `frame-src ${VAULT_URL}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
].join('; ');

http
  .createServer((req, res) => {
    if (req.url === '/' || req.url === '/index.html') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': policy });
      res.end(page);
    } else if (req.url === '/checkout.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8' });
      res.end(script);
    } else {
      res.writeHead(404).end();
    }
  })
  // The address to open is the origin the README allows (http://localhost is another origin, refused).
  .listen(PORT, () => console.log(`checkout on http://127.0.0.1:${PORT} (vault ${VAULT_URL})`));
