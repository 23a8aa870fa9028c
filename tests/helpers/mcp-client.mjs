// mcp-client.mjs: drives `sbx mcp` with the reference MCP TypeScript SDK
// client (tests/mcp-client/node_modules, installed by scripts/deps.sh --mcp-client).
//
//   node mcp-client.mjs acceptance   the acceptance steps; prints
//                                    "PASS step", "SKIP step: why" or
//                                    "FAIL step: why" (exit 1 on a FAIL)
//   node mcp-client.mjs bench N [OPT...]  N round trips each of shell_run true
//                                    (sbx mcp OPT..., e.g. --no-session)
//                                    and file_read; prints p50/p95 in ms
//
// Environment: SBX (the front-end), SBX_HOME, SBX_EXEC_PATH, AGENT
// (default "default"), MCP_INSTALL_PKG (a pip package of the loopback
// registry), MCP_PLUGIN_TOOL, MCP_PLUGIN_ARGS (JSON), MCP_PLUGIN_EXPECT (a
// string its result holds): the plugin tool to call (else the first).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const nm = join(here, '..', 'mcp-client', 'node_modules');
const sdk = (p) => import(pathToFileURL(join(nm, '@modelcontextprotocol',
    'sdk', 'dist', 'esm', p)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const Ajv = (await import(pathToFileURL(join(nm, 'ajv', 'dist', 'ajv.js'))
    .href)).default;

const agent = process.env.AGENT || 'default';
let failed = 0;
const pass = (s) => console.log(`PASS ${s}`);
const fail = (s, why) => { failed++; console.log(`FAIL ${s}: ${why}`); };
const skip = (s, why) => console.log(`SKIP ${s}: ${why}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(extra = []) {
	const transport = new StdioClientTransport({
		command: process.env.SBX,
		args: ['mcp', '--agent', agent, ...extra],
		env: process.env,
		stderr: 'inherit',
	});
	const client = new Client({ name: 'sbx-test', version: '1' });
	await client.connect(transport);
	return client;
}

// Is a process whose command line holds marker still on the host?
function running(marker) {
	for (const p of readdirSync('/proc')) {
		if (!/^\d+$/.test(p))
			continue;
		try {
			const c = readFileSync(`/proc/${p}/cmdline`, 'utf8');
			if (c.includes(marker))
				return true;
		} catch { /* gone */ }
	}
	return false;
}

async function step(name, fn) {
	try {
		await fn();
	} catch (e) {
		fail(name, (e && e.message) || String(e));
	}
}

const sc = (r) => r.structuredContent || {};

async function acceptance() {
	const c = await connect();
	const builtins = ['shell_run', 'sandbox_process', 'file_read',
	    'file_search', 'file_write', 'file_edit', 'file_list',
	    'sandbox_install', 'secret_check', 'secret_request'];
	let tools = [];

	await step('tools', async () => {
		tools = (await c.listTools()).tools;
		const ajv = new Ajv({ strict: false });
		const names = tools.map((t) => t.name);
		for (const b of builtins)
			if (!names.includes(b))
				throw new Error(`${b} missing`);
		// What Claude Desktop and the OpenAI-style APIs accept: one
		// name outside it and they refuse the whole list.
		for (const n of names)
			if (!/^[a-zA-Z0-9_-]{1,64}$/.test(n))
				throw new Error(`${n}: a name clients refuse`);
		if (new Set(names).size !== names.length)
			throw new Error('two tools of one name');
		for (const t of tools) {
			if (t.inputSchema.type !== 'object')
				throw new Error(`${t.name}: not an object`);
			ajv.compile(t.inputSchema);
			if (t.outputSchema)
				ajv.compile(t.outputSchema);
			if (!t.annotations ||
			    typeof t.annotations.readOnlyHint !== 'boolean')
				throw new Error(`${t.name}: no annotations`);
			if (builtins.includes(t.name) &&
			    t.inputSchema.additionalProperties !== false)
				throw new Error(`${t.name}: extra properties`);
		}
		pass(`tools ${tools.length} listed, every schema compiles`);
	});

	await step('shell_run', async () => {
		const r = await c.callTool({ name: 'shell_run', arguments: {
		    command: 'echo hello; echo oops >&2; exit 3' } });
		const res = sc(r).result || {};
		if (r.isError || res.exit_code !== 3 ||
		    res.stdout !== 'hello\n' || res.stderr !== 'oops\n' ||
		    !r.content[0].text.includes('exit code: 3'))
			throw new Error(JSON.stringify(r).slice(0, 300));
		const a = await c.callTool({ name: 'shell_run', arguments: {
		    argv: ['printf', '%s', '$HOME'], env: { FOO: 'bar' } } });
		if (sc(a).result.stdout !== '$HOME')
			throw new Error(JSON.stringify(a).slice(0, 300));
		pass('shell_run exit code, stdout, stderr; argv without shell');
	});

	await step('sandbox_process', async () => {
		const st = await c.callTool({ name: 'sandbox_process',
		    arguments: { action: 'start', command: 'echo up; sleep 60' } });
		const job = sc(st).result && sc(st).result.job;
		if (st.isError || !job)
			throw new Error(JSON.stringify(st).slice(0, 300));
		// The job id is what the model uses, not a host path.
		if ('log_file' in sc(st).result)
			throw new Error(`log_file: ${sc(st).result.log_file}`);
		const p = await c.callTool({ name: 'sandbox_process',
		    arguments: { action: 'poll', job } });
		if (p.isError || sc(p).result.state !== 'running')
			throw new Error(JSON.stringify(p).slice(0, 300));
		const k = await c.callTool({ name: 'sandbox_process',
		    arguments: { action: 'kill', job } });
		if (k.isError || sc(k).result.killed !== true)
			throw new Error(JSON.stringify(k).slice(0, 300));
		const w = await c.callTool({ name: 'sandbox_process',
		    arguments: { action: 'wait', job, timeout: 10 } });
		if (w.isError || sc(w).result.state === 'running')
			throw new Error(JSON.stringify(w).slice(0, 300));
		pass(`sandbox_process start, poll, kill, wait (${job})`);
	});

	await step('files', async () => {
		const w = await c.callTool({ name: 'file_write', arguments: {
		    path: 'notes/a.txt', content: 'one\ntwo\nthree\n',
		    create_dirs: true } });
		if (w.isError && sc(w).reason === 'program_missing') {
			skip('files', 'sbx file is not installed (branch file)');
			return;
		}
		if (w.isError)
			throw new Error('write: ' + JSON.stringify(w).slice(0, 300));
		const e = await c.callTool({ name: 'file_edit', arguments: {
		    path: 'notes/a.txt', old: 'two', new: 'deux' } });
		if (e.isError || sc(e).result.replacements !== 1)
			throw new Error('edit: ' + JSON.stringify(e).slice(0, 300));
		const r = await c.callTool({ name: 'file_read', arguments: {
		    path: 'notes/a.txt' } });
		if (r.isError || !r.content[0].text.includes('deux'))
			throw new Error('read: ' + JSON.stringify(r).slice(0, 300));
		const s = await c.callTool({ name: 'file_search', arguments: {
		    pattern: 'deu+x', path: 'notes' } });
		if (s.isError || !JSON.stringify(sc(s)).includes('a.txt'))
			throw new Error('search: ' + JSON.stringify(s).slice(0, 300));
		const l = await c.callTool({ name: 'file_list', arguments: {
		    path: 'notes' } });
		if (l.isError || !JSON.stringify(sc(l)).includes('a.txt'))
			throw new Error('list: ' + JSON.stringify(l).slice(0, 300));
		pass('files write, edit, read, search, list');
	});

	await step('install', async () => {
		const pkg = process.env.MCP_INSTALL_PKG;
		if (!pkg) {
			skip('install', 'no local registry given (MCP_INSTALL_PKG)');
			return;
		}
		const r = await c.callTool({ name: 'sandbox_install', arguments: {
		    manager: 'pip', packages: [pkg] } });
		if (r.isError)
			throw new Error(JSON.stringify(r).slice(0, 400));
		pass(`install pip ${pkg} from the local registry`);
	});

	await step('plugin', async () => {
		const want = process.env.MCP_PLUGIN_TOOL;
		const p = tools.find((t) => want ? t.name === want :
		    !builtins.includes(t.name));
		if (!p) {
			if (want)
				throw new Error(`${want} is not listed`);
			skip('plugin', 'no plugin tool installed for the agent');
			return;
		}
		const args = JSON.parse(process.env.MCP_PLUGIN_ARGS || '{}');
		const r = await c.callTool({ name: p.name, arguments: args });
		const out = JSON.stringify(sc(r));
		if (r.isError || (process.env.MCP_PLUGIN_EXPECT &&
		    !out.includes(process.env.MCP_PLUGIN_EXPECT)))
			throw new Error(JSON.stringify(r).slice(0, 300));
		pass(`plugin ${p.name} called`);
	});

	await step('secret', async () => {
		const r = await c.callTool({ name: 'secret_request', arguments: {
		    name: 'GH_TOKEN', reason: 'push the branch' } });
		if (r.isError || sc(r).result.present !== false ||
		    !sc(r).result.command.includes('sbx secret set GH_TOKEN'))
			throw new Error(JSON.stringify(r).slice(0, 300));
		pass('secret_request names the command, takes no value');
	});

	await step('progress', async () => {
		let n = 0;
		const r = await c.callTool({ name: 'shell_run', arguments: {
		    command: 'sleep 2.5' } }, undefined, {
		    onprogress: () => { n++; } });
		if (r.isError || n < 1)
			throw new Error(`${n} progress notifications`);
		pass(`progress ${n} notifications during a 2.5 s run`);
	});

	await step('cancel', async () => {
		const marker = 'sleep 47.25';
		const ac = new AbortController();
		// `; :` keeps the shell, whose argv names the run (in the
		// client's warm session no argv of sbx's carries it).
		const p = c.callTool({ name: 'shell_run', arguments: {
		    command: `${marker}; :` } }, undefined, { signal: ac.signal });
		for (let i = 0; i < 100 && !running(marker); i++)
			await sleep(50);
		if (!running(marker))
			throw new Error('the run never started');
		ac.abort();
		await p.then(() => { throw new Error('not cancelled'); },
		    () => {});
		for (let i = 0; i < 100 && running(marker); i++)
			await sleep(50);
		if (running(marker))
			throw new Error('the run is still there after cancel');
		pass('cancel stops the run');
	});

	await c.close();
	process.exit(failed ? 1 : 0);
}

function pct(a, p) {
	const s = [...a].sort((x, y) => x - y);
	return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

async function bench(n, extra) {
	const c = await connect(['--max-per-minute', '0', ...extra]);
	const tag = extra.length ? `(${extra.join(' ')})` : '';
	await c.callTool({ name: 'file_write', arguments: { path: 'bench.txt',
	    content: 'hello\n' } });
	// The first shell_run starts the client's warm session: not timed.
	await c.callTool({ name: 'shell_run', arguments: { argv: ['true'] } });
	for (const [name, args] of [['shell_run', { argv: ['true'] }],
	    ['file_read', { path: 'bench.txt' }]]) {
		const t = [];
		let errs = 0;
		for (let i = 0; i < n; i++) {
			const t0 = process.hrtime.bigint();
			const r = await c.callTool({ name, arguments: args });
			t.push(Number(process.hrtime.bigint() - t0) / 1e6);
			if (r.isError)
				errs++;
		}
		console.log(`${name}${tag} p50 ${pct(t, 0.5).toFixed(2)} ms p95 ` +
		    `${pct(t, 0.95).toFixed(2)} ms (n=${n}, errors=${errs})`);
	}
	await c.close();
}

if (process.argv[2] === 'bench')
	await bench(Number(process.argv[3] || 50), process.argv.slice(4));
else
	await acceptance();
