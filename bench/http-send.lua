-- wrk script for bench/relay.sh's HTTP row (issue 33): POST /api/v1/messages with a fresh Idempotency-Key per
-- request, a body of about HTTP_SIZE bytes (default 2048), the send key from HTTP_KEY. Each wrk thread numbers its
-- own keys, prefixed with the run's start and the thread's number, so no key repeats within or across runs.
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  local size = tonumber(os.getenv("HTTP_SIZE") or "2048")
  -- The MIME headers the gateway composes take about 300 bytes; the text makes up the rest, in 76-character lines.
  local line = string.rep("x", 76) .. "\\r\\n"
  local text = string.rep(line, math.max(1, math.floor((size - 300) / 78)))
  body = '{"from": "bench@example.com", "to": ["sink@example.net"], "subject": "bench", "text": "' .. text .. '"}'
  prefix = "bench-" .. (os.getenv("HTTP_RUN") or tostring(os.time())) .. "-" .. tostring(id) .. "-"
  n = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("HTTP_KEY")
end

function request()
  n = n + 1
  wrk.headers["Idempotency-Key"] = prefix .. n
  return wrk.format(nil, "/api/v1/messages", nil, body)
end

function done(summary, latency, requests)
  -- Read by bench/relay.sh: requests answered 2xx, and the latency percentiles in ms.
  io.write(string.format("wrk-summary requests=%d errors=%d non2xx=%d p50=%.1f p99=%.1f\n", summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
