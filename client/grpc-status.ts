/**
 * The gRPC status codes the client tells apart, by name (https://grpc.github.io/grpc/core/md_doc_statuscodes.html).
 * One table: the retry policy (`./grpc-retry`), the 503 mapping (`./unavailable`) and `connect()`'s resend rules each
 * pick their own set from it.
 */
export const GrpcStatus = {
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNAVAILABLE: 14,
} as const;

export type GrpcStatusName = keyof typeof GrpcStatus;

/** The name of `code` when it is one of the codes above. */
export function grpcStatusName(code: number): GrpcStatusName | undefined {
  return (Object.keys(GrpcStatus) as GrpcStatusName[]).find((name) => GrpcStatus[name] === code);
}
