-- wrk script of bench/campaigns.ts: POST /api/v1/campaigns/{id}/status under load.
--
--   wrk -t2 -c64 -d10s -s bench/campaigns-status.lua http://127.0.0.1:PORT \
--       -- <mode> <campaign-file> <token> <tag> <threads> [action]
--
-- <campaign-file> has one "<id> <status>" line per campaign. Modes:
--   one     every request goes to the first campaign, each thread alternating start and pause,
--           so that concurrent requests also meet 409 invalid_transition;
--   spread  thread t (1-based) takes the campaigns whose line index i has i % threads == t - 1
--           and visits them in turn, each time with the action that is valid for the status it
--           left the campaign in (draft or paused: start; running: pause). A thread has far more
--           campaigns than connections, so a campaign is never asked twice at once;
--   replay  every request is the same: the first campaign, <action>, Idempotency-Key <tag>;
--   get     every request is GET <campaign-file> (a path, for the bare reference route);
--   post    every request is POST <campaign-file> with the replay's headers and body.
-- Each request of "one" and "spread" has its own Idempotency-Key: <tag>-<thread>-<n>.
-- done() prints the answers counted by status, and latency percentiles in microseconds.

local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

function init(args)
  mode = args[1]
  token = args[3]
  tag = args[4]
  local thread_count = tonumber(args[5])
  replay_action = args[6] or "start"
  counts = {}
  sent = 0
  campaigns = {}
  if mode == "get" then
    fixed = wrk.format("GET", args[2])
    return
  end
  if mode == "post" then
    fixed = wrk.format("POST", args[2], {
      ["Authorization"] = "Bearer " .. token,
      ["Content-Type"] = "application/json",
      ["Idempotency-Key"] = tag,
    }, '{"action":"' .. replay_action .. '"}')
    return
  end
  local index = 0
  for line in io.lines(args[2]) do
    local id, status = line:match("^(%S+)%s+(%S+)$")
    if id then
      if mode ~= "spread" or index % thread_count == tid - 1 then
        table.insert(campaigns, { id = id, running = (status == "running") })
      end
      index = index + 1
    end
  end
  headers = {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }
  if mode == "replay" then
    headers["Idempotency-Key"] = tag
    fixed = wrk.format(
      "POST",
      "/api/v1/campaigns/" .. campaigns[1].id .. "/status",
      headers,
      '{"action":"' .. replay_action .. '"}'
    )
  end
end

function request()
  if fixed then
    return fixed
  end
  if tid == 1 and not verified then
    -- wrk calls request() once on its first thread to check the script, and sends nothing:
    -- that call must not count as a visit to a campaign.
    verified = true
    return wrk.format("GET", "/")
  end
  sent = sent + 1
  local campaign = campaigns[(sent - 1) % #campaigns + 1]
  local action
  if mode == "one" then
    action = (sent % 2 == 1) and "start" or "pause"
  else
    action = campaign.running and "pause" or "start"
    campaign.running = not campaign.running
  end
  headers["Idempotency-Key"] = tag .. "-" .. tid .. "-" .. sent
  return wrk.format(
    "POST",
    "/api/v1/campaigns/" .. campaign.id .. "/status",
    headers,
    '{"action":"' .. action .. '"}'
  )
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("counts")) do
      total[status] = (total[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(total) do
    table.insert(parts, '"' .. status .. '":' .. n)
  end
  io.write("BENCH_COUNTS {" .. table.concat(parts, ",") .. "}\n")
  io.write(string.format(
    "BENCH_SUMMARY %d %d %d %d\n",
    summary.requests,
    summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write,
    summary.errors.timeout
  ))
  io.write(string.format(
    "BENCH_LATENCY %d %d %d\n",
    latency:percentile(50),
    latency:percentile(99),
    latency.max
  ))
end
