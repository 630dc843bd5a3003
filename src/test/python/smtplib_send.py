"""Sends one message through Python's smtplib, for e2e/ClientLibrariesTest.

Arguments: port, mode (plain | starttls), user, password, from, to, file with the message (CRLF lines, sent
as they are), then MAIL parameters (SMTPUTF8, BODY=8BITMIME...). Prints the reply to DATA on one line.
"""
import smtplib
import ssl
import sys

port, mode, user, password, sender, recipient, path = sys.argv[1:8]
options = sys.argv[8:]
with open(path, 'rb') as f:
    message = f.read()
with smtplib.SMTP('127.0.0.1', int(port), local_hostname='python.client.test', timeout=120) as s:
    s.ehlo()
    if mode == 'starttls':
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the gateway's certificate is self-signed in the tests
        s.starttls(context=context)
        s.ehlo()
        s.login(user, password)
    code, reply = s.mail(sender, options)
    if code != 250:
        print('MAIL', code, reply.decode('utf-8', 'replace'))
        sys.exit(1)
    code, reply = s.rcpt(recipient)
    if code != 250:
        print('RCPT', code, reply.decode('utf-8', 'replace'))
        sys.exit(1)
    code, reply = s.data(message)
    print(code, reply.decode('utf-8', 'replace'))
