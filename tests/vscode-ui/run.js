// tests/vscode-ui/run.js: 'make test-vscode', tdebug's VS Code extension used
// through a real VS Code's user interface.  code-server (VS Code 1.100.3,
// installed into the cache by setup.sh) serves the workbench on a loopback
// port, Debian's chromium shows it (headless, driven by puppeteer-core), and
// each step is what a person does: a click in the gutter, F5, F11, a look at
// the Call Stack and Variables views, a line typed in the Debug Console,
// Shift+F11, F5 to the end.
//
// Every step waits for what the page shows (a DOM condition, with a generous
// deadline) and keeps a screenshot, OUT/NN-what.png; the adapter's messages
// are in OUT/dap.log, code-server's output in OUT/code-server.log.  OUT is
// $B/test-vscode.
//
// Environment: B (the build directory, with tdebug and tdebug-vscode.vsix),
// TDEBUG_VSCODE_UI_CACHE (setup.sh's cache), TDEBUG_PYTHON (the interpreter
// with torch), CHROMIUM (default /usr/bin/chromium).
'use strict';

const cp = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { createRequire } = require('module');

const ROOT = path.resolve(__dirname, '..', '..');
const B = path.resolve(process.env.B || path.join(ROOT, 'build'));
const OUT = path.join(B, 'test-vscode');
const CACHE = process.env.TDEBUG_VSCODE_UI_CACHE ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'tdebug', 'vscode-ui');
const PYTHON = process.env.TDEBUG_PYTHON || '/usr/bin/python3';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const NPM = path.join(CACHE, 'npm');
const CODE_SERVER_BIN = path.join(CACHE, 'bin');

// Deadlines: generous, for a loaded 2-core machine.  Importing torch under
// gdb takes a minute there at worst; nothing below waits that long when
// the machine is idle.
const UI_DEADLINE = 60e3;
const STOP_DEADLINE = 240e3;

// The program debugged, and the line the breakpoint goes on.
const SCRIPT = `import torch

x = torch.ones(2, 3)
y = torch.full((2, 3), 2.0)
z = torch.add(x, y)
w = z + 1
print("total", w.sum().item())
`;
const BREAK_LINE = 5; // z = torch.add(x, y)
// The C++ function the second breakpoint is on: line 6's 'z + 1' runs it.
const CXX_FUNCTION = 'at::_ops::add_Tensor::call';

const results = [];
let shotNo = 0;
let page = null;

function log(...args) { console.log('test-vscode:', ...args); }

async function shot(what) {
    shotNo++;
    const file = path.join(OUT, `${String(shotNo).padStart(2, '0')}-${what}.png`);
    if (page)
        await page.screenshot({ path: file }).catch(e => log(`cannot take ${file}: ${e.message}`));
    return file;
}

// A step: ACTION, then a screenshot named WHAT.  A failed step ends the run.
async function step(what, action) {
    const start = Date.now();
    try {
        await action();
        const file = await shot(what);
        results.push({ what, status: 'passed' });
        log(`ok     ${what} (${path.relative(B, file)}, ${((Date.now() - start) / 1000).toFixed(1)} s)`);
    } catch (e) {
        const file = await shot(`${what}-FAILED`);
        results.push({ what, status: 'failed', why: e.message });
        log(`FAILED ${what}: ${e.message} (${path.relative(B, file)})`);
        throw e;
    }
}

// What VS Code does on its own and differently from run to run, logged and
// never counted: whether the Call Stack selects the row of the focused frame
// (the editor shows that frame and the adapter gave everything; seen in one
// run after F11 and not at the C++ breakpoint, in the next the other way).
async function observe(what, check) {
    try {
        await check();
        log(`seen   ${what}`);
    } catch (e) {
        log(`unseen ${what}: ${e.message}`);
    }
}

// Wait until FN (run in the page, with ARGS) returns something truthy, and
// return that; WHAT says what was awaited when it never comes.  The page is
// asked every quarter second: a poll for a condition, not a sleep.  POKE,
// when given, runs before each look (to move the mouse again, say).
async function until(what, fn, args = [], timeout = UI_DEADLINE, poke = null) {
    const deadline = Date.now() + timeout;
    let last = null;
    for (;;) {
        try {
            if (poke)
                await poke();
            const v = await page.evaluate(fn, ...args);
            if (v)
                return v;
        } catch (e) {
            last = e; // the page between two states (a navigation): ask again
        }
        if (Date.now() > deadline)
            throw new Error(`${what}: not seen within ${timeout / 1000} s` +
                            (last ? ` (last error: ${last.message.split('\n')[0]})` : ''));
        await new Promise(r => setTimeout(r, 250));
    }
}

function run(cmd, args, opts = {}) {
    const r = cp.spawnSync(cmd, args, { encoding: 'utf8', ...opts });
    if (r.status !== 0)
        throw new Error(`'${cmd} ${args.join(' ')}' failed (${r.error ? r.error.message : 'exit ' + r.status}):\n${r.stdout}${r.stderr}`);
    return r.stdout;
}

// The rows of the Call Stack view, as the user reads them.
function callStackRows() {
    return [...document.querySelectorAll('.debug-call-stack .monaco-list-row')].map(r => ({
        text: r.innerText.replace(/\s+/g, ' ').trim(),
        aria: r.getAttribute('aria-label') || '',
        selected: r.classList.contains('selected') || r.classList.contains('focused'),
    }));
}

async function main() {
    const puppeteer = createRequire(path.join(NPM, 'package.json'))('puppeteer-core');
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.mkdirSync(OUT, { recursive: true });

    // Everything of this run's VS Code (its settings, extensions, logs, the
    // browser's profile) lives in a folder of its own in the cache, removed
    // at the end: nothing lands in the user's home, and runs side by side
    // (two checkouts) keep apart.
    const rundir = fs.mkdtempSync(path.join(CACHE, 'run-'));
    const xdgConfig = path.join(rundir, 'config'), xdgData = path.join(rundir, 'data');
    const userData = path.join(xdgData, 'code-server');
    fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
    fs.mkdirSync(xdgConfig, { recursive: true });
    const env = {
        ...process.env,
        XDG_CONFIG_HOME: xdgConfig, XDG_DATA_HOME: xdgData,
        // code-server's command, for 'tdebug vscode --install-extension';
        // no tdebug: the adapter VS Code runs is the one the install linked.
        PATH: `${CODE_SERVER_BIN}:${process.env.PATH}`,
        TDEBUG_PYTHON: PYTHON,
        TDEBUG_DAP_LOG: path.join(OUT, 'dap.log'),
    };

    // The workspace: a torch script and the configuration 'tdebug vscode'
    // writes for it.
    const ws = path.join(OUT, 'workspace');
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(ws, 'demo.py'), SCRIPT);
    run(path.join(B, 'tdebug'), ['vscode', '--program', 'demo.py'], { cwd: ws, env });
    // The user's settings: no welcome page, no marketplace, no telemetry.
    fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.enableExperiments': false,
        'extensions.ignoreRecommendations': true,
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'security.workspace.trust.enabled': false,
        'window.restoreWindows': 'none',
        'debug.openDebug': 'openOnDebugBreak',
        'git.enabled': false,
    }, null, 2));

    // The extension, installed as a user would: 'tdebug vscode
    // --install-extension', which finds code-server's extensions folder.
    log(run(path.join(B, 'tdebug'), ['vscode', '--install-extension'], { env }).trim());

    // code-server on a free loopback port, behind a password of this run
    // (in a file only this user reads): no other local user can use it.
    const password = crypto.randomBytes(24).toString('hex');
    const config = path.join(rundir, 'config.yaml');
    fs.writeFileSync(config, `bind-addr: 127.0.0.1:0\nauth: password\npassword: ${password}\ncert: false\n`,
                     { mode: 0o600 });
    const csLog = fs.openSync(path.join(OUT, 'code-server.log'), 'w');
    const server = cp.spawn(process.execPath, [
        path.join(NPM, 'node_modules', 'code-server', 'out', 'node', 'entry.js'),
        '--config', config, '--user-data-dir', userData,
        '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
        '--disable-getting-started-override', '--ignore-last-opened', ws,
    ], { env, detached: true, stdio: ['ignore', 'pipe', csLog] });
    // code-server and what it started (the extension host, the adapter, the
    // program) are its process group: ended with this run, however it ends.
    const endServer = () => { try { process.kill(-server.pid, 'SIGTERM'); } catch (e) { /* gone */ } };
    process.on('exit', () => {
        endServer();
        fs.rmSync(rundir, { recursive: true, force: true });
    });
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
        process.on(sig, () => process.exit(128 + os.constants.signals[sig]));
    let browser = null;
    try {
        const url = await new Promise((resolve, reject) => {
            let seen = '';
            const timer = setTimeout(() => reject(new Error('code-server did not say where it listens within 120 s (see code-server.log)')), 120e3);
            server.stdout.on('data', d => {
                fs.writeSync(csLog, d);
                seen += d;
                const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+\/)\s*\n/.exec(seen);
                if (m) { clearTimeout(timer); resolve(m[1]); }
            });
            server.on('exit', code => reject(new Error(`code-server ended (exit ${code}) before listening (see code-server.log)`)));
        });
        log(`code-server at ${url}`);

        browser = await puppeteer.launch({
            executablePath: CHROMIUM,
            headless: true,
            userDataDir: path.join(rundir, 'chromium'),
            args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                   '--disable-background-networking', '--disable-component-update', '--disable-sync',
                   '--window-size=1600,1000'],
            defaultViewport: { width: 1600, height: 1000 },
        });
        page = await browser.newPage();
        await scenario(url, password);
    } finally {
        if (browser)
            await browser.close().catch(() => {});
        endServer();
        // VS Code's own logs (the extension host's, the server's) beside
        // the screenshots.
        fs.cpSync(path.join(userData, 'logs'), path.join(OUT, 'code-server-logs'), { recursive: true });
    }
}

async function scenario(url, password) {
    await step('login', async () => {
        // The first load of the workbench is the heaviest page of the run:
        // 110 s on a loaded 2-core machine, so the stop's deadline.
        await page.goto(url, { waitUntil: 'domcontentloaded', timeout: STOP_DEADLINE });
        await page.waitForSelector('input[name=password]', { timeout: UI_DEADLINE });
        await page.type('input[name=password]', password);
        await Promise.all([page.waitForNavigation({ timeout: STOP_DEADLINE }), page.keyboard.press('Enter')]);
        await until('the workbench with the workspace', () =>
            document.querySelector('.monaco-workbench .explorer-folders-view') &&
            [...document.querySelectorAll('.explorer-folders-view .monaco-list-row')].some(r => r.innerText.includes('demo.py')));
    });

    await step('open-script', async () => {
        await clickRow('.explorer-folders-view .monaco-list-row', 'demo.py');
        await until('demo.py in the editor', () =>
            [...document.querySelectorAll('.editor-instance .view-line')].some(l => l.innerText.includes('torch.add')));
    });

    await step('breakpoint-in-gutter', async () => {
        const spot = await page.evaluate(line => {
            const ed = document.querySelector('.editor-instance .monaco-editor');
            const num = [...ed.querySelectorAll('.line-numbers')].find(n => n.innerText.trim() === String(line));
            const glyph = ed.querySelector('.glyph-margin');
            if (!num || !glyph) return null;
            const n = num.getBoundingClientRect(), g = glyph.getBoundingClientRect();
            return { x: g.left + g.width / 2, y: n.top + n.height / 2 };
        }, BREAK_LINE);
        if (!spot) throw new Error(`cannot find line ${BREAK_LINE}'s gutter`);
        // The gutter offers a breakpoint (a faint dot under the mouse) once
        // VS Code knows a debugger for Python files: after the extensions
        // are read.  Until then a click there does nothing.
        await until('the breakpoint hint under the mouse in the gutter', () =>
            document.querySelector('.editor-instance .codicon-debug-hint'), [], UI_DEADLINE, async () => {
            await page.mouse.move(spot.x + 40, spot.y);
            await page.mouse.move(spot.x, spot.y);
        });
        await page.mouse.click(spot.x, spot.y);
        await page.mouse.move(spot.x + 400, spot.y + 300);
        await until(`a breakpoint on line ${BREAK_LINE}`, () =>
            document.querySelector('.editor-instance .codicon-debug-breakpoint'));
    });

    await step('F5-stopped-at-breakpoint', async () => {
        await page.keyboard.press('F5');
        await stopNumber(1, 'the stop at the breakpoint');
        await until(`the Call Stack's top frame: demo.py line ${BREAK_LINE}, selected, and the editor there`, line => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return rows.length && rows[0].getAttribute('aria-label') === `Stack Frame <module>, line ${line}, demo.py` &&
                rows[0].classList.contains('selected') &&
                document.querySelector('.editor-instance .debug-top-stack-frame-line');
        }, [BREAK_LINE]);
    });

    await step('call-stack-python-and-cpp', async () => {
        await unfoldCallStack();
        const rows = await page.evaluate(callStackRows);
        log('the Call Stack:\n  ' + rows.map(r => r.aria).join('\n  '));
        if (!rows.some(r => /, demo\.py$/.test(r.aria)))
            throw new Error('no Python frame of demo.py in the Call Stack');
        if (!rows.some(r => !/\.py$/.test(r.aria) && /__libc_start|main|Py_/.test(r.aria)))
            throw new Error('no C frame (the interpreter\'s main, libc\'s start) in the Call Stack');
    });

    await step('variables-tensor', async () => {
        await until('the tensor x in the Variables view', () =>
            [...document.querySelectorAll('.debug-variables .monaco-list-row')]
                .some(r => /^x = tensor\(\[\[1\., 1\., 1\.\],\s*\[1\., 1\., 1\.\]\]\)/.test(r.innerText.replace(/\s+/g, ' ').trim())));
    });

    await step('debug-console', async () => {
        await keys(['Control', 'Shift'], 'KeyY');
        await until('the Debug Console\'s input focused', () =>
            document.activeElement && document.activeElement.closest('.repl-input-wrapper'));
        await evaluate('y', /^tensor\(\[\[2\., 2\., 2\.\],\s*\[2\., 2\., 2\.\]\]\)$/);
    });
    // a Python expression, run in the frame at the Python stop (issue #23)
    await step('debug-console-python', () => evaluate('x.shape', /^torch\.Size\(\[2, 3\]\)$/, 30e3));
    await step('no-cache-note-in-debug-console', async () => {
        const note = await page.evaluate(() => [...document.querySelectorAll('.repl .monaco-list-row')]
            .map(r => r.innerText.trim()).find(t => t.startsWith('tdebug: tensor layout')));
        if (note)
            throw new Error(`it shows "${note.slice(0, 60)}..."`);
    });

    await step('F11-into-cpp', async () => {
        await page.keyboard.press('F11');
        await stopNumber(2, 'the stop after F11');
        await until('the Call Stack\'s top frame: a native one, the stack loaded', () => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return rows.length > 1 && !/\.py$/.test(rows[0].getAttribute('aria-label')) &&
                !rows.some(r => /Load More Stack Frames/.test(r.innerText));
        });
        log('the Call Stack:\n  ' + (await page.evaluate(callStackRows)).map(r => r.text).join('\n  '));
    });
    await observe('after F11 the C++ frame where it stopped is selected in the Call Stack', focusedTop);
    await step('F11-editor-shows-machine-code', machineCodeShown);

    await step('shift-F11-out-to-python', async () => {
        await keys(['Shift'], 'F11');
        await stopNumber(3, 'the stop after Shift+F11');
        await unfoldCallStack();
        await until('the Call Stack\'s top frame: demo.py, and the editor at its line', () => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return /, demo\.py$/.test(rows[0].getAttribute('aria-label')) &&
                document.querySelector('.editor-instance .debug-top-stack-frame-line');
        });
    });

    await step('function-breakpoint-cpp', async () => {
        await page.keyboard.press('F1');
        await until('the command palette', () => document.querySelector('.quick-input-widget .quick-input-box input'));
        await page.keyboard.type('Debug: Add Function Breakpoint');
        await until('the command in the palette', () =>
            [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.innerText.includes('Add Function Breakpoint')));
        await page.keyboard.press('Enter');
        await until('the function name box in the Breakpoints view', () =>
            document.activeElement && document.activeElement.closest('.debug-breakpoints'));
        await page.keyboard.type(CXX_FUNCTION);
        await page.keyboard.press('Enter');
        await until(`${CXX_FUNCTION} in the Breakpoints view`, f =>
            [...document.querySelectorAll('.debug-breakpoints .monaco-list-row')].some(r => r.innerText.includes(f)), [CXX_FUNCTION]);
    });

    await step('F5-stopped-in-cpp', async () => {
        await page.keyboard.press('F5');
        await stopNumber(4, `the stop at ${CXX_FUNCTION}`);
        await until('the Call Stack of the stop, loaded', () => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return rows.length > 1 && !rows.some(r => /Load More Stack Frames/.test(r.innerText));
        });
        log('the Call Stack:\n  ' + (await page.evaluate(callStackRows)).map(r => r.text).join('\n  '));
    });
    await step('cpp-breakpoint-frame-first-row', firstRowIs(CXX_FUNCTION));
    await observe(`at the breakpoint on ${CXX_FUNCTION} its frame is selected in the Call Stack`, focusedTop);
    await step('cpp-breakpoint-editor-shows-machine-code', machineCodeShown);

    await step('cpp-frame-tensor-arguments', async () => {
        await unfoldCallStack();
        await clickRow('.debug-call-stack .monaco-list-row', CXX_FUNCTION);
        // z, the tensor the C++ function adds 1 to, decoded from memory.
        await until('the C++ frame\'s first argument in the Variables view: the tensor z', () =>
            [...document.querySelectorAll('.debug-variables .monaco-list-row')]
                .some(r => /^arg1 = tensor\(\[\[3\., 3\., 3\.\],\s*\[3\., 3\., 3\.\]\]\)/.test(r.innerText.replace(/\s+/g, ' ').trim())));
    });

    await step('F5-to-the-end', async () => {
        await page.keyboard.press('F5');
        const deadline = Date.now() + STOP_DEADLINE;
        while (!dapEvents('terminated')) {
            if (dapEvents('stopped') > 4)
                throw new Error('the program stopped again instead of running to its end');
            if (Date.now() > deadline)
                throw new Error(`the adapter sent no 'terminated' event within ${STOP_DEADLINE / 1000} s`);
            await new Promise(r => setTimeout(r, 250));
        }
        await until('the session gone: the debug toolbar hidden, the Call Stack empty', () => {
            const bar = document.querySelector('.debug-toolbar');
            return (!bar || bar.getBoundingClientRect().width === 0) &&
                document.querySelectorAll('.debug-call-stack .monaco-list-row').length === 0;
        });
        const exited = dapMessages().find(m => m.event === 'exited');
        if (!exited || exited.body.exitCode !== 0)
            throw new Error(`the program did not exit with status 0 (${JSON.stringify(exited)})`);
    });
}

// Type EXPR in the Debug Console and wait for the answer, matching WANT.
async function evaluate(expr, want, timeout = UI_DEADLINE) {
    const before = await page.evaluate(() => document.querySelectorAll('.repl .monaco-list-row').length);
    await page.keyboard.type(expr);
    await page.keyboard.press('Enter');
    const answer = await until(`the answer to '${expr}' in the Debug Console`, (n, e) => {
        const rows = [...document.querySelectorAll('.repl .monaco-list-row')].slice(n).map(r => r.innerText.trim());
        const i = rows.indexOf(e);
        return i >= 0 && i + 1 < rows.length ? rows[i + 1] : null;
    }, [before, expr], timeout);
    if (!want.test(answer))
        throw new Error(`'${expr}' answered "${answer}"`);
}

// Press KEY with MODIFIERS held.
async function keys(modifiers, key) {
    for (const m of modifiers)
        await page.keyboard.down(m);
    await page.keyboard.press(key);
    for (const m of modifiers.slice().reverse())
        await page.keyboard.up(m);
}

// Wait for the adapter's Nth 'stopped' event (its transcript, OUT/dap.log,
// counted in whole lines) and VS Code showing a stopped program.
async function stopNumber(n, what) {
    const deadline = Date.now() + STOP_DEADLINE;
    while (dapEvents('stopped') < n) {
        if (Date.now() > deadline)
            throw new Error(`${what}: the adapter sent no 'stopped' event within ${STOP_DEADLINE / 1000} s`);
        if (dapEvents('terminated'))
            throw new Error(`${what}: the session ended instead`);
        await new Promise(r => setTimeout(r, 250));
    }
    await until(`${what}: the debug toolbar's Continue`, () =>
        document.querySelector('.debug-toolbar .codicon-debug-continue'));
}

// The messages the adapter sent so far (its transcript, whole lines only).
function dapMessages() {
    let text = '';
    try {
        text = fs.readFileSync(path.join(OUT, 'dap.log'), 'utf8');
    } catch (e) {
        return [];
    }
    const lines = text.split('\n');
    lines.pop(); // not a whole line yet
    return lines.filter(l => l.startsWith('<- ')).map(l => JSON.parse(l.slice(3)));
}

// How many EVENT events the adapter sent so far.
function dapEvents(event) {
    return dapMessages().filter(m => m.type === 'event' && m.event === event).length;
}

// Open the rest of the stack: VS Code loads it on request ("Load More
// Stack Frames") and folds runs of frames the adapter marks subtle into one
// "Show N More Stack Frames" row.
async function unfoldCallStack() {
    await until('the whole stack, unfolded', () => {
        const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
        return rows.length > 1 && !rows.some(r => /Load More Stack Frames|Show \d+ More/.test(r.innerText));
    }, [], UI_DEADLINE, () => page.evaluate(() => {
        const more = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')]
            .find(r => /Load More Stack Frames|Show \d+ More/.test(r.innerText));
        if (more)
            more.click();
    }));
}

// What a check of the Call Stack waits for the right state before it says
// what it sees instead: the stop and its stack are shown already, so VS Code
// has only its own rendering left to do.
const CHECK_DEADLINE = 10e3;

// The Call Stack's first row is FUNCTION's frame (any frame when NULL).
function firstRowIs(fn) {
    return async () => {
        try {
            await until('the first row', f => {
                const r = document.querySelector('.debug-call-stack .monaco-list-row');
                return r && /^Stack Frame /.test(r.getAttribute('aria-label')) &&
                    (!f || r.getAttribute('aria-label').includes(f));
            }, [fn], CHECK_DEADLINE);
        } catch (e) {
            const rows = await page.evaluate(callStackRows);
            throw new Error(`the first row is "${rows.length ? rows[0].text : 'nothing'}"`);
        }
    };
}

// The Call Stack's first row is the focused frame.
async function focusedTop() {
    try {
        await until('the first frame focused', () => {
            const r = document.querySelector('.debug-call-stack .monaco-list-row');
            return r && r.classList.contains('selected');
        }, [], CHECK_DEADLINE);
    } catch (e) {
        const rows = await page.evaluate(callStackRows);
        const i = rows.findIndex(r => r.selected);
        throw new Error(i < 0 ? 'no frame is focused' : `the focused frame is row ${i + 1}, "${rows[i].text}", not "${rows[0].text}"`);
    }
}

// The editor shows where a frame without a source file stopped: VS Code's
// Disassembly view, or the adapter's listing of the function's machine code
// (a source the adapter serves: VS Code focuses only frames with a source),
// with the line of the stop marked.
async function machineCodeShown() {
    try {
        await until('the machine code where it stopped', () => {
            const d = document.querySelector('.disassembly-view');
            if (d && d.getBoundingClientRect().width > 0)
                return true;
            const t = document.querySelector('.tabs-container .tab.active');
            return t && t.innerText.includes('[machine code]') &&
                document.querySelector('.editor-instance .debug-top-stack-frame-line');
        }, [], CHECK_DEADLINE);
    } catch (e) {
        const tab = await page.evaluate(() => {
            const t = document.querySelector('.tabs-container .tab.active');
            return t ? t.innerText.trim() : 'nothing';
        });
        throw new Error(`no disassembly view; the editor shows "${tab}"`);
    }
}

// Click the row of the list SELECTOR whose text has TEXT.
async function clickRow(selector, text) {
    const rows = await page.$$(selector);
    for (const r of rows)
        if ((await r.evaluate(e => e.innerText)).includes(text))
            return r.click();
    throw new Error(`no row '${text}' in ${selector}`);
}

main().then(() => {
    const count = s => results.filter(r => r.status === s).length;
    const failed = count('failed');
    console.log(`test-vscode: ${count('passed')} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
}, e => {
    log(e.stack || e.message);
    const count = s => results.filter(r => r.status === s).length;
    console.log(`test-vscode: ${count('passed')} passed, ${count('failed') || 1} failed`);
    process.exit(1);
});
