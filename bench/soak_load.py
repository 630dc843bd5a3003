#!/usr/bin/env python3
"""The soak's load (bench/soak.sh): THREADS SMTP clients, each message with its own Message-ID, and one
JSON line per message with what the client heard: the reply to the final dot, a refusal before it, or
how the connection was lost. Runs until STOPFILE exists. Standard library only.

    python3 bench/soak_load.py PORT THREADS OUT.jsonl STOPFILE
"""
import json
import os
import random
import smtplib
import sys
import threading
import time
import uuid

port, threads, out_path, stopfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
out = open(out_path, "a", buffering=1)
out_lock = threading.Lock()


def record(rec):
    with out_lock:
        out.write(json.dumps(rec) + "\n")


def text(reply):
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


def message(mid, i, n):
    filler = "".join("line %d of message %s, filler to make it a few kilobytes long\r\n" % (k, mid)
                     for k in range(random.randint(10, 60)))
    return ("From: sender%d@soak.test\r\nTo: rcpt@soak.test\r\nSubject: soak %d/%d\r\nMessage-ID: <%s>\r\n"
            "Date: %s\r\n\r\n%s" % (i, i, n, mid, time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()), filler))


def worker(i):
    rnd = random.Random(i)
    n = 0
    while not os.path.exists(stopfile):
        try:
            s = smtplib.SMTP("127.0.0.1", port, timeout=60)
            s.ehlo("soak%d.test" % i)
        except (OSError, smtplib.SMTPException):
            time.sleep(0.2)  # the gateway is down (killed, restarting): try again
            continue
        try:
            for _ in range(rnd.randint(1, 10)):  # a few messages per connection
                if os.path.exists(stopfile):
                    break
                n += 1
                mid = "soak-%d-%d-%s@soak.test" % (i, n, uuid.uuid4().hex[:12])
                rec = {"mid": mid, "t": round(time.time(), 3)}
                try:
                    code, reply = s.mail("sender%d@soak.test" % i)
                    if code != 250:
                        rec.update(stage="MAIL", code=code, reply=text(reply))
                        record(rec)
                        break
                    code, reply = s.rcpt("rcpt@soak.test")
                    if code not in (250, 251):
                        rec.update(stage="RCPT", code=code, reply=text(reply))
                        record(rec)
                        break
                    code, reply = s.data(message(mid, i, n))
                    rec.update(stage="DATA", code=code, reply=text(reply))
                    record(rec)
                    if code == 421:
                        break
                except smtplib.SMTPDataError as e:  # the DATA command itself refused
                    rec.update(stage="DATA command", code=e.smtp_code, reply=text(e.smtp_error))
                    record(rec)
                    break
                except (OSError, smtplib.SMTPException) as e:
                    rec.update(stage="lost", code=None, reply=repr(e))
                    record(rec)
                    break
        finally:
            try:
                s.close()
            except OSError:
                pass


workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
