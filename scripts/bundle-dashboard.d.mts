/** Builds the web dashboard into dist/dashboard/ (see bundle-dashboard.mjs). */
export function buildDashboard(): Promise<void>
