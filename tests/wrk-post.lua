-- SPDX-License-Identifier: ISC
-- wrk-post.lua: POST a 1 KiB JSON body (Content-Type application/json) and
-- count the answers by status, for scripts/bench-ingest.
--
--   wrk -t2 -c64 -d10s -s tests/wrk-post.lua http://127.0.0.1:PORT/webhooks/bench
--
-- wrk's Requests/sec counts every answer; done() prints, per run,
--   bench_requests N      answers received
--   bench_201 N           answers with status 201
--   bench_non201 N        every other status
--   bench_duration_us N   the run's duration
--   bench_201_per_s X     bench_201 / duration
--   bench_errors N        connect, read, write and timeout errors

-- With WRK_TYPED set, the body names an event type first, as Stripe's do
-- ({"type":"invoice.paid",...}), still 1 KiB: scripts/bench-ingest's
-- BENCH_FILTER.
local head = os.getenv("WRK_TYPED") and '{"type":"invoice.paid","pad":"'
    or '{"pad":"'
local pad = string.rep("x", 1024 - string.len(head .. '"}'))
wrk.method = "POST"
wrk.body = head .. pad .. '"}'
wrk.headers["Content-Type"] = "application/json"

local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	ok201 = 0
	non201 = 0
end

function response(status, headers, body)
	if status == 201 then
		ok201 = ok201 + 1
	else
		non201 = non201 + 1
	end
end

function done(summary, latency, requests)
	local ok, non = 0, 0
	for _, t in ipairs(threads) do
		ok = ok + t:get("ok201")
		non = non + t:get("non201")
	end
	local e = summary.errors
	local secs = summary.duration / 1e6
	io.write(string.format("bench_requests %d\n", summary.requests))
	io.write(string.format("bench_201 %d\n", ok))
	io.write(string.format("bench_non201 %d\n", non))
	io.write(string.format("bench_duration_us %d\n", summary.duration))
	io.write(string.format("bench_201_per_s %.1f\n", ok / secs))
	io.write(string.format("bench_errors %d\n",
	    e.connect + e.read + e.write + e.timeout))
end
