// The consistency check Ferry starts once a rejoined or rebuilt server replicates again (an operation of its own):
// its id, or why it could not start — read from the rejoin's or the rebuild's result.
interface FollowedByCheck {
  consistency_check_operation_id?: number | null;
  consistency_check_error?: string | null;
}

export function FollowingCheck({ result }: { result: FollowedByCheck }) {
  if (result.consistency_check_operation_id != null) {
    return <p className="small">Ferry checks it against its source, chunk by chunk: operation #{result.consistency_check_operation_id}.</p>;
  }
  return result.consistency_check_error ? <p className="small error">{result.consistency_check_error}</p> : null;
}
