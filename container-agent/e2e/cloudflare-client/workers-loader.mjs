// Module resolution hook (registered with node:module's register()) that lets @cloudflare/sandbox
// load unchanged from node_modules in plain Node:
// - the Workers-only "cloudflare:workers" specifier resolves to workers-stub.mjs;
// - @cloudflare/containers' ESM build imports its own files without the ".js" extension, as a
//   bundler (wrangler's esbuild) accepts and Node's ESM resolver does not, so a relative import
//   inside node_modules/@cloudflare/ that is not found is tried again with ".js".
const STUB = new URL('./workers-stub.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'cloudflare:workers') {
    return { url: STUB, shortCircuit: true };
  }
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const bundlerStyle = err?.code === 'ERR_MODULE_NOT_FOUND'
      && (specifier.startsWith('./') || specifier.startsWith('../'))
      && !/\.[cm]?js$/.test(specifier)
      && context.parentURL?.includes('/node_modules/@cloudflare/');
    if (!bundlerStyle) throw err;
    return nextResolve(`${specifier}.js`, context);
  }
}
