// The trace receiver's answers, through the dashboard's /api/traces.

// {traces: [{traceId, spans}]}: every trace naming an object, or the one trace asked for.
export async function fetchTraces({ resource, namespace, name, traceId }) {
  const url = traceId
    ? `api/traces/${encodeURIComponent(traceId.trim().toLowerCase())}`
    : `api/traces?${new URLSearchParams({ resource, namespace, name })}`;
  const answer = await fetch(url);
  const body = await answer.json().catch(() => ({ message: `${answer.status} from ${url}` }));
  if (answer.status === 404 && traceId) return { traces: [], message: body.message };
  if (!answer.ok) throw new Error(body.message || `${answer.status} from ${url}`);
  return traceId ? { traces: [body] } : body;
}

export function milliseconds(ns) {
  return `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 1)} ms`;
}
