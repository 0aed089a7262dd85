/** A bench script's `--name=value` option from the command line, or `fallback` when it is not given. */
export function arg(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
