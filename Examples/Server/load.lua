-- wrk script for the load test: each request signs as one of 1,000 members (token
-- "tok-<id>-<secret>", the secret this run's HABITAT_LOAD_TEST_SECRET, as load.sh sets it),
-- and each response must echo, as the member it read from its environment after an await, the
-- member whose token was sent. Mismatches are counted per thread and printed at the end.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  mismatches = 0
  checked = 0
  math.randomseed(os.time() + tonumber(tostring(args):match("0x(%x+)") or "0", 16) % 1000)
end

local secret = os.getenv("HABITAT_LOAD_TEST_SECRET") or ""

function request()
  -- The load test's members: ids 1,000,001 to 1,001,000, apart from the real members'.
  local id = 1000000 + math.random(1, 1000)
  return wrk.format("GET", "/load/me", { ["Authorization"] = "Bearer tok-" .. id .. "-" .. secret })
end

function response(status, headers, body)
  checked = checked + 1
  local sent = body:match('"sent":(%-?%d+)')
  local user = body:match('"user":(%-?%d+)')
  if status ~= 200 or sent == nil or sent ~= user then
    mismatches = mismatches + 1
  end
end

function done(summary, latency, requests)
  local mismatched, total = 0, 0
  for _, thread in ipairs(threads) do
    mismatched = mismatched + thread:get("mismatches")
    total = total + thread:get("checked")
  end
  io.write(string.format("CHECKED %d MISMATCHES %d\n", total, mismatched))
  io.write(string.format("LATENCY p50_us %d p99_us %d\n", latency:percentile(50), latency:percentile(99)))
  io.write(string.format("REQUESTS %d ERRORS %d\n", summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
