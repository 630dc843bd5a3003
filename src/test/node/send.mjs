// Sends one raw message through nodemailer's SMTP transport, for e2e/ClientLibrariesTest.
// Arguments: port, mode (plain | starttls), user, password, from, to, file with the message, and "8bit" to
// declare BODY=8BITMIME (nodemailer's envelope.use8BitMime).
// Prints the server's reply to the message, or the error, on one line; exits 1 on error.
import nodemailer from 'nodemailer';
import fs from 'node:fs';

const [port, mode, user, pass, from, to, file, body] = process.argv.slice(2);
const transport = nodemailer.createTransport({
  host: '127.0.0.1',
  port: Number(port),
  secure: false,
  name: 'node.client.test',
  ignoreTLS: mode === 'plain',
  requireTLS: mode === 'starttls',
  tls: { rejectUnauthorized: false }, // the gateway's certificate is self-signed in the tests
  auth: mode === 'starttls' ? { user, pass } : undefined,
  connectionTimeout: 30000,
  socketTimeout: 120000,
});
try {
  const info = await transport.sendMail({
    envelope: { from, to: [to], use8BitMime: body === '8bit' },
    raw: fs.readFileSync(file),
  });
  console.log(info.response);
} catch (e) {
  console.log('ERROR ' + (e.response || e.message));
  process.exit(1);
}
