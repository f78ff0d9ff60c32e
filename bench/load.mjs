// The load generator, run as its own process so it can be pinned to a core of its own.
// Input: one JSON argument (autocannon options). Output: one JSON line with the figures we use.
import autocannon from 'autocannon';

const { headersPerClient, headersPerRequest, ...options } = JSON.parse(process.argv[2]);
// Many credentials (e.g. 1,000 keys): each request takes the next set of headers, across connections.
let turn = 0;
if (headersPerRequest?.length) {
  options.requests = [
    {
      setupRequest: (req) => ({
        ...req,
        headers: { ...req.headers, ...headersPerRequest[turn++ % headersPerRequest.length] },
      }),
    },
  ];
}
// Several credentials: connection i sends the i-th set of headers (round robin).
let next = 0;
const setupClient = headersPerClient?.length
  ? (client) => client.setHeaders({ ...options.headers, ...headersPerClient[next++ % headersPerClient.length] })
  : undefined;
const cpu0 = process.cpuUsage();
const result = await autocannon({
  ...options,
  setupClient,
  renderProgressBar: false,
  renderResultsTable: false,
  renderLatencyTable: false,
});
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
    // The generator's own CPU time (ms), so a case's whole CPU budget per request can be added up.
    cpuMs: (() => {
      const d = process.cpuUsage(cpu0);
      return (d.user + d.system) / 1000;
    })(),
  })}\n`,
);
