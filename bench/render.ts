/**
 * Writes BENCHMARKS.md again from the JSON a full `npm run bench` printed, with the report code as it is now: for a
 * change to how results are shown (a table, a target's wording or arithmetic), never to what was measured. The
 * report's header still names the run's own date, command and machine.
 *
 *   npm run -s bench > bench.json && npx tsx bench/render.ts bench.json
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderReport, type BenchResults } from './report';

const path = process.argv[2];
if (!path) throw new Error('Usage: npx tsx bench/render.ts <the JSON of a full npm run bench>');
// `targets` is what the run's own code made of the results: the report evaluates them again.
const { targets: _evaluated, ...results } = JSON.parse(await readFile(path, 'utf8')) as BenchResults & {
  targets?: unknown;
};
if (!results.machine || !results.idleWake || !results.memory) {
  throw new Error(`${path} is not the JSON of a full npm run bench (an --only run cannot make the report).`);
}
const reportPath = fileURLToPath(new URL('../BENCHMARKS.md', import.meta.url));
await writeFile(reportPath, renderReport(results));
process.stderr.write(`wrote ${reportPath} from ${path}\n`);
