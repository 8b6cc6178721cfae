// tests/vscode-ui/run.js: 'make test-vscode', tdebug's VS Code extension used
// through a real VS Code's user interface.  code-server (VS Code 1.100.3,
// installed into the cache by setup.sh) serves the workbench on a loopback
// port, Debian's chromium shows it (headless, driven by puppeteer-core), and
// each step is what a person does.  Three parts, in one browser:
//   basic   demo.py: a click in the gutter, F5, a look at the Call Stack and
//           Variables views, a line typed in the Debug Console, F11 into
//           C++, Shift+F11, a function breakpoint, F5 to the end, its
//           breakpoints removed from the Breakpoints view's menu;
//   more    more.py: a log point and a conditional breakpoint from the
//           gutter's menu, the Python exception filters ticked, Loaded
//           Scripts, Run to Cursor, Step Into Target, the Disassembly view,
//           a subprocess child as a session of its own, the exception
//           widget at a torch error;
//   attach  an attach configuration's process picker, Pause, Disconnect.
// TDEBUG_VSCODE_UI_PARTS=more,attach runs some of them.
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

// The second program: a log point and a conditional breakpoint in a loop,
// a line of two calls (Step Into Target), a child process, and a torch
// error raised and caught.  Its child, child.py, loops on a line with a
// breakpoint until the file its argument names exists.
const MORE = `import subprocess
import sys

import torch


def scale(t, k):
    return t * (k % 2 + 1)


x = torch.ones(2, 3)
y = torch.full((2, 3), 2.0)
for k in range(5):
    x = scale(x, k)
a = torch.add(x.relu(), y)
r = subprocess.run([sys.executable, "child.py", "child-stop"])
print("child exit", r.returncode)
try:
    b = torch.ones(2) + torch.ones(3)
except RuntimeError:
    pass
print("more done")
`;
const LOG_LINE = 8;     // return t * (k % 2 + 1): the log point 'scale {k}'
const COND_LINE = 14;   // x = scale(x, k): the breakpoint 'k == 3'
const TARGETS_LINE = 15; // a = torch.add(x.relu(), y)
const RAISE_LINE = 19;  // b = torch.ones(2) + torch.ones(3)
const CHILD = `import os
import sys
import time


def work(i):
    return i * 2


deadline = time.monotonic() + 600
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    work(1)
    time.sleep(0.02)
print("child done")
`;
const CHILD_LINE = 7;   // return i * 2
// The program the picker attaches to: it waits until the file its
// argument names exists.
const TARGET = `import os
import sys
import time


def wait_for(path):
    deadline = time.monotonic() + 600
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


print("target", os.getpid(), flush=True)
wait_for(sys.argv[1])
`;

// The parts of the run, in order, in one browser after one login:
// TDEBUG_VSCODE_UI_PARTS=more,attach picks some.  VS Code keeps the
// breakpoints for the workspace, from part to part: basic removes its own
// at its end; more's are in files the attach part's program never runs.
const PARTS = (process.env.TDEBUG_VSCODE_UI_PARTS || 'basic,more,attach').split(',');
const WS = path.join(OUT, 'workspace');
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
    const ws = WS;
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(ws, 'demo.py'), SCRIPT);
    fs.writeFileSync(path.join(ws, 'more.py'), MORE);
    fs.writeFileSync(path.join(ws, 'child.py'), CHILD);
    fs.writeFileSync(path.join(ws, 'target.py'), TARGET);
    run(path.join(B, 'tdebug'), ['vscode', '--program', 'demo.py'], { cwd: ws, env });
    run(path.join(B, 'tdebug'), ['vscode', '--program', 'more.py'], { cwd: ws, env });
    run(path.join(B, 'tdebug'), ['vscode', '--attach', 'pick'], { cwd: ws, env });
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
        await login(url, password);
        for (const part of PARTS)
            await ({ basic, more, attach })[part]();
    } finally {
        if (browser)
            await browser.close().catch(() => {});
        endServer();
        // VS Code's own logs (the extension host's, the server's) beside
        // the screenshots.
        fs.cpSync(path.join(userData, 'logs'), path.join(OUT, 'code-server-logs'), { recursive: true });
    }
}

async function login(url, password) {
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
}

// The first part: demo.py, a breakpoint in the gutter, F5, F11 into C++,
// the Variables view and the Debug Console, Shift+F11, a C++ function
// breakpoint, F5 to the end.
async function basic() {
    await step('open-script', async () => {
        await clickRow('.explorer-folders-view .monaco-list-row', 'demo.py');
        await until('demo.py in the editor', () =>
            [...document.querySelectorAll('.editor-instance .view-line')].some(l => l.innerText.includes('torch.add')));
    });

    await step('breakpoint-in-gutter', async () => {
        await gutterClick(BREAK_LINE);
        await until(`a breakpoint on line ${BREAK_LINE}`, () =>
            document.querySelector('.editor-instance .codicon-debug-breakpoint'));
    });

    await step('F5-stopped-at-breakpoint', async () => {
        await page.keyboard.press('F5');
        await stopNumber(1, 'the stop at the breakpoint');
        await topFrameIs('<module>', BREAK_LINE, 'demo.py');
    });
    await observe('at the Python breakpoint its frame is selected in the Call Stack', focusedTop);

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

    // VS Code keeps breakpoints for the workspace: the next part's program
    // would stop at this part's function breakpoint too (more.py's
    // torch.add runs it).  Each is removed as a user does: right-click its
    // row in the Breakpoints view, Remove Breakpoint.
    await step('breakpoints-removed-in-breakpoints-view', async () => {
        await showBreakpointsView();
        for (let left; (left = await page.evaluate(breakpointRows)).length;) {
            const name = left[0];
            await contextMenu(`the Breakpoints view's row "${name}"`, async () => {
                const spot = await page.evaluate(n => {
                    const row = [...document.querySelectorAll('.debug-breakpoints .monaco-list-row')]
                        .find(r => r.querySelector('[class*="codicon-debug-breakpoint"]') &&
                              r.innerText.replace(/\s+/g, ' ').trim() === n);
                    const b = row && row.getBoundingClientRect();
                    return b && b.width > 0 ? { x: b.left + Math.min(b.width / 2, 80), y: b.top + b.height / 2 } : null;
                }, name);
                if (!spot)
                    return false;
                await page.mouse.click(spot.x, spot.y, { button: 'right' });
                return true;
            }, /^Remove Breakpoint$/);
            await until(`"${name}" gone from the Breakpoints view`, n =>
                ![...document.querySelectorAll('.debug-breakpoints .monaco-list-row')]
                    .some(r => r.innerText.replace(/\s+/g, ' ').trim() === n), [name]);
        }
    });
}

// The rows of the Breakpoints view that are breakpoints (a line's, a
// function's; not the exception filters, which have no breakpoint icon), as
// their text reads.
function breakpointRows() {
    return [...document.querySelectorAll('.debug-breakpoints .monaco-list-row')]
        .filter(r => r.querySelector('[class*="codicon-debug-breakpoint"]'))
        .map(r => r.innerText.replace(/\s+/g, ' ').trim());
}

// Show the Breakpoints view (Run and Debug's pane, Ctrl+Shift+D), unfolded.
async function showBreakpointsView() {
    let pressed = 0;
    await until('the Breakpoints view, unfolded', () => {
        const pane = [...document.querySelectorAll('.pane')].find(p => {
            const h = p.querySelector('.pane-header');
            return h && /^breakpoints/i.test(h.innerText.trim());
        });
        if (!pane || pane.getBoundingClientRect().width === 0)
            return false;
        const header = pane.querySelector('.pane-header');
        if (header.getAttribute('aria-expanded') === 'false') {
            header.click();
            return false;
        }
        const list = pane.querySelector('.debug-breakpoints');
        return list && list.getBoundingClientRect().height > 0;
    }, [], UI_DEADLINE, async () => {
        // Run and Debug shown again only when hidden, and not at every look
        // (the view takes its time to draw on a loaded machine).
        const shown = await page.evaluate(() => [...document.querySelectorAll('.pane-header')]
            .some(h => /^breakpoints/i.test(h.innerText.trim()) && h.getBoundingClientRect().width > 0));
        if (!shown && Date.now() - pressed > 10e3) {
            pressed = Date.now();
            await keys(['Control', 'Shift'], 'KeyD');
        }
    });
}

// The second part: more.py.  A breakpoint in the child's code, a log point
// and a conditional breakpoint added from the gutter's menu, the Python
// exception filters checked in the Breakpoints view, Loaded Scripts, Run to
// Cursor, Step Into Target, the Disassembly view, the child process as a
// session of its own, and the exception widget at a torch error.
async function more() {
    await step('child-breakpoint-in-gutter', async () => {
        await openFile('child.py', 'return i * 2');
        await gutterClick(CHILD_LINE);
        await until(`a breakpoint on child.py's line ${CHILD_LINE}`, () =>
            document.querySelector('.editor-instance .codicon-debug-breakpoint'));
    });

    await step('logpoint-from-gutter-menu', async () => {
        await openFile('more.py', 'torch.add(x.relu(), y)');
        await gutterMenu(LOG_LINE, /^Add Logpoint/);
        await typeInBreakpointWidget('scale {k}');
        await until(`a log point on line ${LOG_LINE}`, () =>
            document.querySelector('.editor-instance .codicon-debug-breakpoint-log'));
    });

    await step('conditional-breakpoint-from-gutter-menu', async () => {
        await gutterMenu(COND_LINE, /^Add Conditional Breakpoint/);
        await typeInBreakpointWidget('k == 3');
        await until(`a conditional breakpoint on line ${COND_LINE}`, () =>
            document.querySelector('.editor-instance .codicon-debug-breakpoint-conditional'));
    });

    await step('F5-more-stopped-where-condition-holds', async () => {
        await afterStop('the stop at the conditional breakpoint', () => startConfiguration('tdebug: more.py (Python + C++)'));
        await topFrameIs('<module>', COND_LINE, 'more.py');
        await until('k = 3 in the Variables view', () =>
            [...document.querySelectorAll('.debug-variables .monaco-list-row')]
                .some(r => r.innerText.replace(/\s+/g, ' ').trim() === 'k = 3'));
    });

    await step('logpoint-lines-in-debug-console', async () => {
        await showDebugConsole();
        // k = 0, 1, 2 ran the log point's line before the stop at k == 3.
        await until('"scale 0", "scale 1", "scale 2" in the Debug Console, and no "scale 3"', () => {
            const rows = [...document.querySelectorAll('.repl .monaco-list-row')].map(r => r.innerText.trim());
            return ['scale 0', 'scale 1', 'scale 2'].every(l => rows.includes(l)) && !rows.includes('scale 3');
        });
    });

    await step('python-exception-filters-checked', async () => {
        for (const label of ['Python: raised exceptions', 'Python: uncaught exceptions', 'Python: user uncaught exceptions'])
            await until(`"${label}" checked in the Breakpoints view`, l => {
                const row = [...document.querySelectorAll('.debug-breakpoints .monaco-list-row')]
                    .find(r => r.innerText.trim().split('\n')[0].trim() === l);
                const box = row && row.querySelector('input[type=checkbox]');
                if (box && !box.checked)
                    box.click();
                return box && box.checked;
            }, [label]);
        // The filters reach the adapter (VS Code sends them at once).
        await waitFor('setExceptionBreakpoints with the three Python filters in the adapter\'s transcript', () => {
            const sent = dapRequests('setExceptionBreakpoints').pop();
            const filters = sent ? sent.arguments.filters : [];
            return ['raised', 'uncaught', 'userUnhandled'].every(f => filters.includes(f));
        });
    });

    await step('loaded-scripts-view', async () => {
        // A pane of Run and Debug, folded until its header is clicked.
        await until('the workspace\'s more.py among the Loaded Scripts', ws => {
            const pane = [...document.querySelectorAll('.pane')].find(p => {
                const h = p.querySelector('.pane-header');
                return h && /Loaded Scripts/i.test(h.innerText);
            });
            if (!pane)
                return false;
            const header = pane.querySelector('.pane-header');
            if (header.getAttribute('aria-expanded') === 'false') {
                header.click();
                return false;
            }
            const rows = [...pane.querySelectorAll('.monaco-list-row')];
            const texts = rows.map(r => r.innerText.trim());
            window.tdebugLoadedScripts = texts;
            // A folder of one entry shares its row: '.../workspace/more.py'.
            if (texts.some(t => /(^|\/)more\.py$/.test(t)))
                return true;
            // Open the way to it: the root folder (VS Code leaves its
            // label empty), then the folders of the workspace's path
            // (several in a row when each has one entry), never the
            // system's folders (a long list: the rows past the pane's end
            // are not drawn).
            for (const r of rows)
                if (r.querySelector('.monaco-tl-twistie.collapsible.collapsed') &&
                    (ws + '/').includes(`/${r.innerText.trim()}/`.replace('//', '/')))
                    r.querySelector('.monaco-tl-twistie').click();
            return false;
        }, [WS]).catch(async e => {
            const rows = await page.evaluate(() => window.tdebugLoadedScripts || []);
            throw new Error(`${e.message}; it shows: ${rows.join(' | ')}`);
        });
    });

    await step('run-to-cursor', async () => {
        await afterStop(`the stop at line ${TARGETS_LINE}`, () => editorMenu(TARGETS_LINE, /^Run to Cursor$/));
        await topFrameIs('<module>', TARGETS_LINE, 'more.py');
        await showDebugConsole();
        await until('the log point\'s "scale 3" and "scale 4" in the Debug Console', () => {
            const rows = [...document.querySelectorAll('.repl .monaco-list-row')].map(r => r.innerText.trim());
            return rows.includes('scale 3') && rows.includes('scale 4');
        });
    });

    let targets = null;
    await step('step-into-target-menu', async () => {
        await editorMenu(TARGETS_LINE, /^Step Into Target$/);
        await waitForPage('the calls of the line in a menu: x.relu, torch.add', async () => {
            targets = (await page.evaluate(menuItems)).map(i => i.label);
            return targets.includes('x.relu') && targets.includes('torch.add');
        });
        log(`Step Into Target offers: ${targets.join(', ')}`);
    });

    await step('step-into-target-torch-add', async () => {
        await afterStop('the stop in torch.add\'s C++', () => menuItem(/^torch\.add$/));
        await until('the Call Stack\'s top frame: torch\'s add operator, the stack loaded', () => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return rows.length > 1 && /add/.test(rows[0].getAttribute('aria-label')) &&
                !/\.py$/.test(rows[0].getAttribute('aria-label')) &&
                !rows.some(r => /Load More Stack Frames/.test(r.innerText));
        });
        log('the Call Stack:\n  ' + (await page.evaluate(callStackRows)).slice(0, 4).map(r => r.text).join('\n  '));
    });

    await step('disassembly-view', async () => {
        await contextMenu('the Call Stack\'s first row', async () => {
            const row = await page.$('.debug-call-stack .monaco-list-row');
            const box = row && await row.boundingBox();
            if (!box)
                return false;
            await page.mouse.click(box.x + box.width / 3, box.y + box.height / 2, { button: 'right' });
            return true;
        }, /^Open Disassembly View$/);
        const text = await until('the Disassembly view: addresses, instructions, the stop\'s marked', () => {
            const v = document.querySelector('.disassembly-view');
            if (!v || v.getBoundingClientRect().width === 0)
                return null;
            const t = v.innerText;
            return /0x[0-9a-f]{6,}/.test(t) && /\b(mov|push|sub|lea|call|jmp|endbr64|cmp|test)\b/.test(t) &&
                v.querySelector('.codicon-debug-stackframe') ? t : null;
        });
        log('the Disassembly view:\n  ' + text.split('\n').filter(l => l.trim()).slice(0, 4).join('\n  '));
    });

    await step('child-session-stopped-in-child', async () => {
        await afterStop('the child\'s stop at its breakpoint', () => page.keyboard.press('F5'));
        await until('the child\'s session in the Call Stack, stopped in child.py', line => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            return rows.some(r => /child process \d+/.test(r.innerText)) &&
                rows.some(r => r.getAttribute('aria-label') === `Stack Frame work, line ${line}, child.py`);
        }, [CHILD_LINE]);
        log('the Call Stack:\n  ' + (await page.evaluate(callStackRows)).map(r => r.text).join('\n  '));
    });

    await step('exception-widget-torch-error', async () => {
        fs.writeFileSync(path.join(WS, 'child-stop'), '');
        // The child's session ends on the way.
        await afterStop('the stop at the torch error', () => page.keyboard.press('F5'), dapEvents('terminated') + 1);
        await until('the child\'s session gone from the Call Stack', () =>
            ![...document.querySelectorAll('.debug-call-stack .monaco-list-row')].some(r => /child process \d+/.test(r.innerText)));
        const w = await until('the exception widget: RuntimeError, torch\'s message, the c10 throw site', () => {
            const e = document.querySelector('.exception-widget');
            return e && /Exception has occurred: RuntimeError/.test(e.innerText) &&
                /The size of tensor a \(2\) must match the size of tensor b \(3\)/.test(e.innerText) ? e.innerText : null;
        });
        log('the exception widget:\n  ' + w.split('\n').slice(0, 12).join('\n  '));
        if (!/c10::Error/.test(w) || !/torchCheckFail|infer_size/.test(w))
            throw new Error('the widget does not show the C++ side (c10::Error, where it was thrown)');
    });

    await step('F5-more-to-the-end', async () => {
        const ended = dapEvents('terminated');
        await page.keyboard.press('F5');
        await waitFor('the adapter\'s \'terminated\' event', () => dapEvents('terminated') > ended, STOP_DEADLINE);
        await until('the session gone from the Call Stack', () =>
            document.querySelectorAll('.debug-call-stack .monaco-list-row').length === 0);
    });
}

// The third part: an attach configuration with "${command:pickProcess}":
// the picker lists a running Python program, the session attaches to the
// one picked, pauses it, and Disconnect leaves it running.
async function attach() {
    const stopFile = path.join(WS, 'target-stop');
    fs.rmSync(stopFile, { force: true });
    const target = cp.spawn(PYTHON, [path.join(WS, 'target.py'), stopFile],
                            { cwd: WS, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    process.on('exit', () => { try { process.kill(-target.pid, 'SIGKILL'); } catch (e) { /* gone */ } });
    let said = '';
    target.stdout.on('data', d => { said += d; });
    await step('process-picker-lists-the-program', async () => {
        await waitFor('target.py started', () => said.includes(`target ${target.pid}\n`));
        await startConfiguration('tdebug: attach to a picked process (Python + C++)');
        await until('the picker\'s list', () =>
            document.querySelector('.quick-input-widget input') &&
            /Python process to attach to/.test(document.querySelector('.quick-input-widget input').getAttribute('placeholder') || ''));
        await page.keyboard.type(String(target.pid));
        await until(`target.py (pid ${target.pid}) in the picker`, pid =>
            [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
                .some(r => r.innerText.includes(pid) && r.innerText.includes('target.py')), [String(target.pid)]);
    });

    await step('picked-attached-paused', async () => {
        await page.keyboard.press('Enter');
        await until('the attached session in the Call Stack', () =>
            document.querySelector('.debug-toolbar .codicon-debug-pause'));
        // F6 until VS Code asks the adapter to pause (a key it takes only
        // once it holds the session for running).
        await afterStop('the stop at Pause', async () => {
            const asked = dapRequests('pause').length;
            let pressed = 0;
            await waitForPage('VS Code\'s pause request', async () => {
                if (dapRequests('pause').length > asked)
                    return true;
                if (pressed++ % 8 === 0)
                    await page.keyboard.press('F6');
                return false;
            });
        });
        await unfoldCallStack();
        await until('target.py\'s wait_for in the Call Stack', () =>
            [...document.querySelectorAll('.debug-call-stack .monaco-list-row')]
                .some(r => /^Stack Frame wait_for, line \d+, target\.py$/.test(r.getAttribute('aria-label'))));
    });

    await step('disconnect-leaves-it-running', async () => {
        await keys(['Shift'], 'F5');
        await until('the session gone', () => document.querySelectorAll('.debug-call-stack .monaco-list-row').length === 0);
        if (target.exitCode !== null || target.signalCode !== null)
            throw new Error(`the program ended (${target.exitCode ?? target.signalCode})`);
        fs.writeFileSync(stopFile, '');
        const code = await new Promise(r => target.exitCode !== null ? r(target.exitCode) : target.on('exit', c => r(c)));
        if (code !== 0)
            throw new Error(`the program, let go, exited with status ${code}`);
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

// The requests VS Code sent the adapter so far, of COMMAND.
function dapRequests(command) {
    return dapTranscript('-> ').filter(m => m.type === 'request' && m.command === command);
}

// Wait until FN (run here, not in the page) returns something truthy.
async function waitFor(what, fn, timeout = UI_DEADLINE) {
    return waitForPage(what, async () => fn(), timeout);
}

// Wait until the async FN (which may ask the page) returns something truthy.
async function waitForPage(what, fn, timeout = UI_DEADLINE) {
    const deadline = Date.now() + timeout;
    for (;;) {
        const v = await fn();
        if (v)
            return v;
        if (Date.now() > deadline)
            throw new Error(`${what}: not seen within ${timeout / 1000} s`);
        await new Promise(r => setTimeout(r, 250));
    }
}

// Run ACTION, then wait for one more 'stopped' event from the adapters
// (every session's: they share the transcript) and a stopped program;
// ENDED as stopNumber's.
async function afterStop(what, action, ended = dapEvents('terminated')) {
    const n = dapEvents('stopped');
    await action();
    await stopNumber(n + 1, what, ended);
}

// Open NAME from the Explorer and wait for the editor to show TEXT.
async function openFile(name, text) {
    await keys(['Control'], 'KeyP');
    await until('the Go to File box', () => document.querySelector('.quick-input-widget .quick-input-box input'));
    await page.keyboard.type(name);
    await until(`${name} in the quick open list`, n =>
        [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.innerText.includes(n)), [name]);
    await page.keyboard.press('Enter');
    await until(`${name} in the editor`, t =>
        [...document.querySelectorAll('.editor-instance .view-line')]
            .some(l => l.innerText.replace(/\u00a0/g, ' ').includes(t)), [text]);
}

// Where LINE of the editor is: its gutter (glyph margin) and its text.
async function lineSpot(line) {
    const spot = await until(`line ${line} in the editor`, l => {
        const ed = [...document.querySelectorAll('.editor-instance .monaco-editor')].find(e => e.getBoundingClientRect().width > 0);
        const num = ed && [...ed.querySelectorAll('.line-numbers')].find(n => n.innerText.trim() === String(l));
        const glyph = ed && ed.querySelector('.glyph-margin');
        const text = ed && ed.querySelector('.view-lines');
        if (!num || !glyph || !text) return null;
        const n = num.getBoundingClientRect(), g = glyph.getBoundingClientRect(), t = text.getBoundingClientRect();
        // tx: the line's first column (a Step Into Target there asks
        // which call; inside a call's columns it steps into that one).
        return { x: g.left + g.width / 2, y: n.top + n.height / 2, tx: t.left + 2 };
    }, [line]);
    return spot;
}

// Click LINE's gutter, once VS Code offers a breakpoint there (a faint dot
// under the mouse, after the extensions are read).
async function gutterClick(line) {
    const spot = await lineSpot(line);
    await until('the breakpoint hint under the mouse in the gutter', () =>
        document.querySelector('.editor-instance .codicon-debug-hint'), [], UI_DEADLINE, async () => {
        await page.mouse.move(spot.x + 40, spot.y);
        await page.mouse.move(spot.x, spot.y);
    });
    await page.mouse.click(spot.x, spot.y);
    await page.mouse.move(spot.x + 400, spot.y + 300);
}

// Right-click LINE's gutter and pick the item of its menu matching ITEM.
async function gutterMenu(line, item) {
    await contextMenu(`the gutter of line ${line}`, async () => {
        const spot = await lineSpot(line);
        await page.mouse.click(spot.x, spot.y, { button: 'right' });
        return true;
    }, item);
}

// Right-click LINE's text in the editor (the cursor goes there) and pick
// the item of the editor's context menu matching ITEM.  The menu's debug
// items (Run to Cursor) are offered, enabled, only while the editor's text
// has the focus (not the panel the last step used): the menu is opened
// again until it offers ITEM.
async function editorMenu(line, item) {
    await contextMenu(`the editor's line ${line}`, async () => {
        const spot = await lineSpot(line);
        await page.mouse.click(spot.tx, spot.y);
        const focused = await page.evaluate(() => {
            const e = document.activeElement;
            return !!(e && e.closest('.editor-instance .monaco-editor'));
        });
        if (!focused)
            return false;
        await page.mouse.click(spot.tx, spot.y, { button: 'right' });
        return true;
    }, item);
}

// Open a context menu with OPEN (a right-click; it returns false when it
// could not try) until the menu offers an enabled item matching RE, then
// click that item.  A menu without it is closed (Escape) and opened again:
// what a menu offers follows the focus and the debug state, which settle
// on their own time on a loaded machine.
async function contextMenu(what, open, re, timeout = 2 * UI_DEADLINE) {
    let items = [];
    await waitForPage(`${what}: a context menu with ${re}`, async () => {
        if ((await page.evaluate(menuItems)).length) {
            await page.keyboard.press('Escape');
            await waitForPage('the menu closed', async () => !(await page.evaluate(menuItems)).length)
                .catch(() => {});
            return false;
        }
        if (!await open())
            return false;
        items = await waitForPage('a context menu', async () => {
            const m = await page.evaluate(menuItems);
            return m.length ? m : null;
        }, 10e3).catch(() => []);
        return items.some(i => re.test(i.label) && !i.disabled);
    }, timeout).catch(e => {
        throw new Error(`${e.message}; the menu showed: ${items.map(i => i.label + (i.disabled ? ' (disabled)' : '')).join(' | ') || 'nothing'}`);
    });
    await menuItem(re);
}

// The visible items of the open context menu (VS Code draws menus in a
// shadow root): their labels, where they are, and whether they are greyed.
function menuItems() {
    const out = [];
    const walk = root => {
        for (const e of root.querySelectorAll('.monaco-menu .action-label')) {
            const b = e.getBoundingClientRect();
            if (b.width > 0 && e.innerText.trim())
                out.push({ label: e.innerText.trim(), x: b.left + b.width / 2, y: b.top + b.height / 2,
                           disabled: e.classList.contains('disabled') || !!e.closest('.action-item.disabled') });
        }
        for (const e of root.querySelectorAll('*'))
            if (e.shadowRoot)
                walk(e.shadowRoot);
    };
    walk(document);
    return out;
}

// Click the item of the open context menu whose label matches RE.
async function menuItem(re) {
    let items = [];
    const it = await waitForPage(`the menu item ${re}`, async () => {
        items = await page.evaluate(menuItems);
        return items.find(i => re.test(i.label));
    }).catch(() => {
        throw new Error(`no menu item ${re}; the menu shows: ${items.map(i => i.label).join(' | ') || 'nothing'}`);
    });
    // A click the menu takes too early (as it opens, on a loaded machine)
    // leaves it open: click again until it closes.
    await waitForPage(`the menu closed by a click on ${re}`, async () => {
        const open = (await page.evaluate(menuItems)).find(i => re.test(i.label));
        if (!open)
            return true;
        await page.mouse.move(open.x, open.y);
        await page.mouse.click(open.x, open.y);
        await new Promise(r => setTimeout(r, 500)); // a pause between two clicks, not a wait for a state
        return false;
    });
}

// Type TEXT in the breakpoint widget the gutter's menu opened, and Enter.
async function typeInBreakpointWidget(text) {
    await until('the breakpoint widget\'s input focused', () =>
        document.activeElement && document.activeElement.closest('.breakpoint-widget'));
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
    await until('the breakpoint widget closed', () => !document.querySelector('.breakpoint-widget') ||
        document.querySelector('.breakpoint-widget').getBoundingClientRect().height === 0);
}

// Run the command palette's command NAME; when ENTER is false, stop at
// what it opens (another quick pick).
async function command(name, enter = true) {
    // A command shows in the palette once what enables it is known (the
    // debug commands: once the extensions are read): until then, the
    // palette is closed and opened again.
    const deadline = Date.now() + 2 * UI_DEADLINE;
    for (;;) {
        await page.keyboard.press('F1');
        await until('the command palette', () => document.querySelector('.quick-input-widget .quick-input-box input'));
        await page.keyboard.type(name);
        try {
            await until(`'${name}' in the palette`, n =>
                [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
                    .some(r => r.innerText.split('\n')[0].trim() === n), [name], 10e3);
            break;
        } catch (e) {
            if (Date.now() > deadline)
                throw e;
            await page.keyboard.press('Escape');
        }
    }
    await page.keyboard.press('Enter');
    if (enter)
        await until('the palette closed', () => {
            const w = document.querySelector('.quick-input-widget');
            return !w || w.style.display === 'none' || w.getBoundingClientRect().height === 0;
        });
}

// Start the launch configuration NAME ("Debug: Select and Start Debugging").
async function startConfiguration(name) {
    await command('Debug: Select and Start Debugging', false);
    await until('the list of configurations', n =>
        [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.innerText.includes(n)), [name]);
    await page.keyboard.type(name.replace(/ \(.*/, ''));
    await until(`'${name}' first in the list`, n => {
        const r = document.querySelector('.quick-input-list .monaco-list-row');
        return r && r.innerText.includes(n);
    }, [name]);
    await page.keyboard.press('Enter');
}

// The Call Stack's first frame is FN at LINE of FILE, and the editor there.
async function topFrameIs(fn, line, file) {
    await until(`the Call Stack's top frame: ${fn}, ${file} line ${line}, and the editor at it`, (f, l, n) => {
        const r = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')]
            .find(x => /^Stack Frame /.test(x.getAttribute('aria-label')));
        return r && r.getAttribute('aria-label') === `Stack Frame ${f}, line ${l}, ${n}` &&
            document.querySelector('.editor-instance .debug-top-stack-frame-line');
    }, [fn, line, file]);
}

// Show the Debug Console (Ctrl+Shift+Y toggles it: only when hidden).
async function showDebugConsole() {
    const shown = await page.evaluate(() => {
        const r = document.querySelector('.repl');
        return r && r.getBoundingClientRect().height > 0;
    });
    if (!shown)
        await keys(['Control', 'Shift'], 'KeyY');
    await until('the Debug Console', () => {
        const r = document.querySelector('.repl');
        return r && r.getBoundingClientRect().height > 0;
    });
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
// counted in whole lines) and VS Code showing a stopped program; a session
// that ends first (more 'terminated' events than ENDED) fails it.
async function stopNumber(n, what, ended = dapEvents('terminated')) {
    const deadline = Date.now() + STOP_DEADLINE;
    while (dapEvents('stopped') < n) {
        if (Date.now() > deadline)
            throw new Error(`${what}: the adapter sent no 'stopped' event within ${STOP_DEADLINE / 1000} s`);
        if (dapEvents('terminated') > ended)
            throw new Error(`${what}: the session ended instead`);
        await new Promise(r => setTimeout(r, 250));
    }
    await until(`${what}: the debug toolbar's Continue`, () =>
        document.querySelector('.debug-toolbar .codicon-debug-continue'));
}

// The messages of the adapter's transcript so far whose lines start with
// MARK ('-> ': VS Code's, '<- ': the adapter's), whole lines only.
function dapTranscript(mark) {
    let text = '';
    try {
        text = fs.readFileSync(path.join(OUT, 'dap.log'), 'utf8');
    } catch (e) {
        return [];
    }
    const lines = text.split('\n');
    lines.pop(); // not a whole line yet
    return lines.filter(l => l.startsWith(mark)).map(l => JSON.parse(l.slice(mark.length)));
}

// The messages the adapter sent so far.
function dapMessages() {
    return dapTranscript('<- ');
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
