# A loopback stand-in for the GitHub REST API, for the ci/post-comment test: serves the issue comments given
# in a JSON file, records every request (method, path, body) to a log, and exits after N requests.
# usage: fake_github.py PORT_FILE LOG_FILE COMMENTS_JSON N
import json, os, sys
from urllib.parse import parse_qs, urlparse
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, log_file, comments_file, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
comments = json.load(open(comments_file))
log = []

class handler(BaseHTTPRequestHandler):
    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        log.append({"method": self.command, "path": self.path, "body": body,
                    "auth": self.headers.get("Authorization", "")})
        with open(log_file, "w") as f:
            json.dump(log, f)
        return body

    def do_GET(self):
        self.record()
        query = parse_qs(urlparse(self.path).query)
        page = int(query.get("page", ["1"])[0])
        self.reply(200, comments[(page - 1) * 100: page * 100])

    def do_POST(self):
        self.record()
        self.reply(201, {"id": 999})

    def do_PATCH(self):
        self.record()
        self.reply(200, {"id": int(self.path.rsplit("/", 1)[1])})

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
for _ in range(n):
    server.handle_request()
