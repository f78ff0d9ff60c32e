// The load generator, run as its own process so it can be pinned to a core of its own.
// Input: one JSON argument (autocannon options). Output: one JSON line with the figures we use.
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2]);
const result = await autocannon({ ...options, renderProgressBar: false, renderResultsTable: false, renderLatencyTable: false });
process.stdout.write(
  `${JSON.stringify({
    requests: result.requests.average,
    total: result.requests.total,
    duration: result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: result.statusCodeStats,
  })}\n`,
);
