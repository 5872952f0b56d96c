// The two members of Node's `process` the script uses, declared here so that the project
// needs no @types/node: its only dependencies are the generator, the fetch client and tsc.
declare const process: {
  readonly env: Record<string, string | undefined>;
  exit(code: number): never;
};
