-- wrk script of bench/keys.ts: each request carries the next of the keys given as arguments,
-- so that a load of tens of thousands of requests stays under every key's own rate limit.
-- The requests are formatted once, in init: a request costs the client one table lookup.
--
--   wrk -t2 -c64 -d5s -s bench/keys-rotate.lua http://127.0.0.1:PORT/path -- <key> [<key>...]

local requests = {}
local n = 0

function init(args)
  for i = 1, #args do
    requests[i] = wrk.format("GET", nil, { ["authorization"] = "Bearer " .. args[i] })
  end
end

function request()
  n = n + 1
  return requests[(n % #requests) + 1]
end
