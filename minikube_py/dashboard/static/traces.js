// The trace receiver's answers, through the dashboard's /api/traces.

// fetch, tried again (3 times at most) when the request failed on the network: the
// browser drops requests in flight when the machine's addresses change (a node's network
// namespace made or removed), with net::ERR_NETWORK_CHANGED.
async function fetchRetrying(url, options = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(url, options);
    } catch (error) {
      if (!(error instanceof TypeError) || attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

// {traces: [{traceId, spans}]}: every trace naming an object, or the one trace asked for.
export async function fetchTraces({ resource, namespace, name, traceId }) {
  const url = traceId
    ? `api/traces/${encodeURIComponent(traceId.trim().toLowerCase())}`
    : `api/traces?${new URLSearchParams({ resource, namespace, name })}`;
  const answer = await fetchRetrying(url);
  const body = await answer.json().catch(() => ({ message: `${answer.status} from ${url}` }));
  if (answer.status === 404 && traceId) return { traces: [], message: body.message };
  if (!answer.ok) throw new Error(body.message || `${answer.status} from ${url}`);
  return traceId ? { traces: [body] } : body;
}

// The object's spans, then each new one as the receiver keeps it, handed to `each`,
// until `signal` aborts (the receiver's follow stream: one JSON span per line).
export async function followTraces({ resource, namespace, name }, signal, each) {
  const query = new URLSearchParams({ resource, namespace, name, follow: "true" });
  const answer = await fetchRetrying(`api/traces?${query}`, { signal });
  if (!answer.ok) {
    const body = await answer.json().catch(() => ({}));
    throw new Error(body.message || `${answer.status} from api/traces`);
  }
  const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const lines = (rest + value).split("\n");
    rest = lines.pop();
    for (const line of lines) if (line.trim()) each(JSON.parse(line));
  }
}

export function milliseconds(ns) {
  return `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 1)} ms`;
}
