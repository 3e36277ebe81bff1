-- wrk script for load.sh's sign-in flood: every request signs in as a new, unknown name with a
-- wrong password, so each one costs a password hash (an unknown name is hashed too) and no
-- name reaches its limit of attempts. Answers: 401 (hashed), 503 (the hashing pool's queue
-- full: refused at once, with Retry-After).
function request()
  local body = '{"name":"flood-' .. math.random(1, 1000000000) .. '","password":"guess"}'
  return wrk.format("POST", "/signin", { ["Content-Type"] = "application/json" }, body)
end

local statuses = {}
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
