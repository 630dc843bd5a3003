#!/usr/bin/env python3
"""A minimal SMTP sink for trying Ledgerpost locally: accepts every message, prints one line per
message, and (with --dir) stores each body as a file, numbered on from the highest number already in the
directory (a restarted sink never overwrites an earlier message). Loopback only. Standard library only.

    python3 scripts/smtp_sink.py 2526 [--dir /tmp/sink]
"""
import argparse
import asyncio
import itertools
import os
import re

counter = itertools.count(1)


def next_number(store):
    """One more than the highest NNNNNN.eml in the directory (1 when there is none)."""
    numbers = [int(m.group(1)) for m in (re.fullmatch(r"(\d+)\.eml", n) for n in os.listdir(store)) if m]
    return max(numbers, default=0) + 1


async def session(reader, writer, store):
    def send(line):
        writer.write((line + "\r\n").encode())

    send("220 sink.local ESMTP smtp_sink.py")
    mail_from, rcpts = None, []
    try:
        while True:
            raw = await asyncio.wait_for(reader.readline(), timeout=300)
            if not raw:
                break
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            verb = line[:4].upper()
            if verb == "EHLO":
                writer.write(b"250-sink.local\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 104857600\r\n")
            elif verb == "HELO":
                send("250 sink.local")
            elif verb == "MAIL":
                mail_from, rcpts = line[10:].strip(), []
                send("250 2.1.0 Ok")
            elif verb == "RCPT":
                rcpts.append(line[8:].strip())
                send("250 2.1.5 Ok")
            elif verb == "DATA":
                send("354 End data with <CR><LF>.<CR><LF>")
                await writer.drain()
                body = bytearray()
                while True:
                    chunk = await reader.readline()
                    if not chunk or chunk == b".\r\n":
                        break
                    body += chunk[1:] if chunk.startswith(b".") else chunk
                n = next(counter)
                if store:
                    with open(os.path.join(store, "%06d.eml" % n), "wb") as f:
                        f.write(bytes(body))
                print("message %d from %s to %s, %d bytes" % (n, mail_from, ",".join(rcpts), len(body)), flush=True)
                send("250 2.0.0 Ok: queued as SINK%d" % n)
            elif verb == "RSET" or verb == "NOOP":
                send("250 2.0.0 Ok")
            elif verb == "QUIT":
                send("221 2.0.0 Bye")
                await writer.drain()
                break
            else:
                send("502 5.5.2 Command not recognized")
            await writer.drain()
    except (asyncio.TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--dir", default=None, help="store each message body here")
    args = parser.parse_args()
    global counter
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        counter = itertools.count(next_number(args.dir))
    server = await asyncio.start_server(lambda r, w: session(r, w, args.dir), "127.0.0.1", args.port)
    print("smtp_sink listening on 127.0.0.1:%d" % args.port, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
