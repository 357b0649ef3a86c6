// Builds dist/ once before the suite: the package tests, the demo test and the contract load the built package.
import { execFileSync } from 'node:child_process';

export default function build(): void {
  // For a run of suites that load only the sources: CLEANTURN_SKIP_BUILD=1 leaves dist/ as it is.
  if (process.env.CLEANTURN_SKIP_BUILD === '1') return;
  try {
    execFileSync('npx', ['tsup'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`the build failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}
