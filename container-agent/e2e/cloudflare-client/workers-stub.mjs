// What @cloudflare/sandbox and @cloudflare/containers import from the Workers runtime's
// "cloudflare:workers" module, for loading them in plain Node. The route clients this test uses
// (SandboxClient and its sub-clients) only call fetch; these names are needed for the modules to
// load, and the Durable Object classes that extend them are never constructed here.
export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}
export class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}
export class RpcTarget {}
// Their tracing helper checks `tracing?.enterSpan` and runs the function directly without it.
export const tracing = undefined;
export const env = {};
