// tdebug dap driven by Microsoft's own Debug Adapter Protocol client for
// tests, @vscode/debugadapter-testsupport's DebugClient (pinned in
// package.json and package-lock.json, installed by 'make deps').
//
//   node tests/dap/scenarios.js NAME
//
// runs one scenario and exits 0, or prints what failed and exits 1.  Every
// message the adapter sends is appended, one JSON a line, to
// $TDAP_TRANSCRIPT; tests/e2e/test_dap_client.py runs each scenario, then
// checks every message against the DAP JSON Schema.  Inputs come from the
// environment: TDEBUG (the binary), TDAP_PYTHON, TDAP_DIR (a scratch
// folder), TDAP_TARGET_PID (attach), TDAP_OUT (facts for the test to check).
'use strict';

const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const TDEBUG = process.env.TDEBUG;
const PYTHON = process.env.TDAP_PYTHON || '/usr/bin/python3';
const DIR = process.env.TDAP_DIR;
const TIMEOUT = 180000; // generous: gdb reading torch's symbols on a loaded machine
const TORCH_ADD = 'at::_ops::add_Tensor::call';

function client() {
    const dc = new DebugClient(TDEBUG, 'dap', 'tdebug');
    dc.defaultTimeout = TIMEOUT;
    const dispatch = dc.dispatch;
    dc.dispatch = function (body) {
        fs.appendFileSync(process.env.TDAP_TRANSCRIPT, body.replace(/\n/g, ' ') + '\n');
        return dispatch.call(this, body);
    };
    return dc;
}

function script(name, text) {
    const p = path.join(DIR, name);
    fs.writeFileSync(p, text);
    return p;
}

function note(facts) {
    fs.writeFileSync(process.env.TDAP_OUT, JSON.stringify(facts));
}

// Launch PROGRAM, setting breakpoints with SETUP(dc) once 'initialized' came.
async function launch(dc, args, setup) {
    await dc.start();
    await Promise.all([
        dc.waitForEvent('initialized').then(async () => {
            if (setup) await setup(dc);
            return dc.configurationDone();
        }),
        dc.launch(Object.assign({ python: PYTHON }, args)),
    ]);
}

// The next stop and its stack.  WAITING: a wait for 'stopped' registered
// before the request that causes it (an event that comes in the same read
// as that request's response would be missed otherwise).
async function stoppedFrames(dc, reason, waiting) {
    const ev = await (waiting || dc.waitForEvent('stopped'));
    if (reason) assert.strictEqual(ev.body.reason, reason, JSON.stringify(ev.body));
    const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
    return { ev, frames: st.body.stackFrames };
}

const TORCH_PROGRAM = 'import torch\n' +
    'a = torch.ones(2)\n' +
    'x = a + 1  # line 3\n' +
    'print("x =", x)\n';

// A loop of pure Python: line 3 runs ten times.
const LOOP_PROGRAM = 'total = 0\n' +
    'for i in range(10):\n' +
    '    total += i  # line 3\n' +
    'print("total", total)\n';

// The local NAME of the frame FRAME, as the Variables view shows it.
async function local(dc, frame, name) {
    const scopes = (await dc.scopesRequest({ frameId: frame.id })).body.scopes;
    const vars = (await dc.variablesRequest({
        variablesReference: scopes[0].variablesReference })).body.variables;
    const v = vars.find(v => v.name === name);
    assert.ok(v, 'no local ' + name + ' in ' + JSON.stringify(vars));
    return v.value;
}

// Launch LOOP_PROGRAM with BP (a SourceBreakpoint) on its line 3; the
// values of i at each stop until the program ends, and its output.
async function loopStops(name, bp) {
    const dc = client();
    const prog = script(name, LOOP_PROGRAM);
    const output = [];
    dc.on('output', ev => output.push(ev.body));
    const seen = [];
    const ended = dc.waitForEvent('terminated');
    let stopped = dc.waitForEvent('stopped');
    await launch(dc, { program: prog }, async dc => {
        const r = await dc.setBreakpointsRequest({ source: { path: prog },
                                                   breakpoints: [Object.assign({ line: 3 }, bp)] });
        assert.ok(r.body.breakpoints[0].verified, JSON.stringify(r.body));
    });
    for (;;) {
        const ev = await Promise.race([stopped, ended]);
        if (ev.event === 'terminated') break;
        assert.strictEqual(ev.body.reason, 'breakpoint', JSON.stringify(ev.body));
        const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
        const top = st.body.stackFrames[0];
        assert.strictEqual(top.line, 3, JSON.stringify(top));
        seen.push({ i: await local(dc, top, 'i'), description: ev.body.description });
        stopped = dc.waitForEvent('stopped');
        await dc.continueRequest({ threadId: ev.body.threadId });
    }
    await dc.stop();
    return { seen, output };
}

const scenarios = {
    // A condition in Python, evaluated in the frame: one stop, i == 7.
    async python_condition() {
        const { seen } = await loopStops('pc.py', { condition: 'i == 7 and total > 20' });
        assert.deepStrictEqual(seen.map(s => s.i), ['7'], JSON.stringify(seen));
    },

    // hitCondition %4: the 4th and the 8th hit (i 3 and 7); with a
    // condition, only the hits whose condition holds count.
    async python_hit_condition() {
        let { seen } = await loopStops('ph.py', { hitCondition: '%4' });
        assert.deepStrictEqual(seen.map(s => s.i), ['3', '7'], JSON.stringify(seen));
        ({ seen } = await loopStops('ph2.py', { condition: 'i % 2 == 1', hitCondition: '>=4' }));
        assert.deepStrictEqual(seen.map(s => s.i), ['7', '9'], JSON.stringify(seen));
    },

    // A log point: no stop, one output line a hit, its {expressions}
    // evaluated in the frame; an expression that raises says so.
    async python_logpoint() {
        const { seen, output } = await loopStops('pl.py', {
            logMessage: 'i={i} sq={i * i} {{braces}} {nosuch}', condition: 'i >= 8' });
        assert.deepStrictEqual(seen, []);
        const lines = output.filter(o => /^i=/.test(o.output)).map(o => o.output);
        assert.ok(output.every(o => !/^i=/.test(o.output) || o.category === 'console'));
        assert.deepStrictEqual(lines, [
            "i=8 sq=64 {braces} <NameError: name 'nosuch' is not defined>\n",
            "i=9 sq=81 {braces} <NameError: name 'nosuch' is not defined>\n",
        ], JSON.stringify(output));
        assert.ok(/total 45/.test(output.filter(o => o.category === 'stdout')
                                        .map(o => o.output).join('')), JSON.stringify(output));
    },

    // At a Python breakpoint, the Debug Console and watches run Python in
    // the frame (in the process, by the hook); a name that raises says so.
    async python_evaluate() {
        const dc = client();
        const prog = script('pv.py', LOOP_PROGRAM);
        const stopped = dc.waitForEvent('stopped');
        await launch(dc, { program: prog }, dc => dc.setBreakpointsRequest({
            source: { path: prog }, breakpoints: [{ line: 3, condition: 'i == 4' }] }));
        const { frames } = await stoppedFrames(dc, 'breakpoint', stopped);
        const ev = async (expression, context) => (await dc.evaluateRequest({
            expression, frameId: frames[0].id, context: context || 'repl' })).body;
        assert.strictEqual((await ev('i * 10 + total')).result, '46');
        assert.strictEqual((await ev('[n for n in range(i)]', 'watch')).result, '[0, 1, 2, 3]');
        assert.strictEqual((await ev('i', 'hover')).result, '4');
        let failed = null;
        try { await ev('nosuch + 1'); } catch (e) { failed = e; }
        assert.ok(failed && /NameError: name 'nosuch' is not defined/.test(failed.message),
                  String(failed));
        // completions: the frame's names, and after a dot the attributes
        const labels = async text => (await dc.customRequest('completions', {
            text, column: text.length + 1, frameId: frames[0].id })).body.targets.map(t => t.label);
        assert.deepStrictEqual(await labels('to'), ['total']);
        assert.ok((await labels('x = tot')).includes('total'));
        const attrs = await labels('total.bit_');
        assert.ok(attrs.includes('bit_length'), JSON.stringify(attrs));
                // setVariable in the Locals scope, setExpression: the program sees them
        const scopes = (await dc.scopesRequest({ frameId: frames[0].id })).body.scopes;
        const set = (await dc.customRequest('setVariable', {
            variablesReference: scopes[0].variablesReference, name: 'total', value: '1000' })).body;
        assert.strictEqual(set.value, '1000');
        const setx = (await dc.customRequest('setExpression', {
            expression: 'extra', value: 'total * 2', frameId: frames[0].id })).body;
        assert.strictEqual(setx.value, '2000');
        const output = [];
        dc.on('output', ev => output.push(ev.body.output));
        const ended = dc.waitForEvent('terminated');
        await dc.setBreakpointsRequest({ source: { path: prog }, breakpoints: [] });
        await dc.continueRequest({ threadId: 1 });
        await ended;
        assert.ok(/total 1039/.test(output.join('')), JSON.stringify(output));  // 1000 + 4+...+9
        await dc.stop();
    },

    // A C++ function breakpoint with a hit condition (every 2nd call):
    // tdebug counts the hits gdb reports.
    async native_hit_condition() {
        const dc = client();
        const prog = script('nh.py', 'import torch\na = torch.ones(2)\nfor k in range(4):\n' +
                            '    a = a + 1  # line 4\nprint("a", a.tolist())\n');
        const output = [];
        dc.on('output', ev => output.push(ev.body.output));
        const ended = dc.waitForEvent('terminated');
        let stopped = dc.waitForEvent('stopped');
        await launch(dc, { program: prog }, dc => dc.setFunctionBreakpointsRequest({
            breakpoints: [{ name: TORCH_ADD, hitCondition: '%2' }] }));
        const ks = [];
        for (;;) {
            const ev = await Promise.race([stopped, ended]);
            if (ev.event === 'terminated') break;
            const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
            const py = st.body.stackFrames.find(f => f.source && f.source.path === prog);
            assert.strictEqual(py.line, 4);
            ks.push(await local(dc, py, 'k'));
            stopped = dc.waitForEvent('stopped');
            await dc.continueRequest({ threadId: ev.body.threadId });
        }
        assert.deepStrictEqual(ks, ['1', '3']);
        assert.ok(/a \[5\.0, 5\.0\]/.test(output.join('')), JSON.stringify(output));
        await dc.stop();
    },

    // A condition that raises stops, and says why.
    async python_condition_error() {
        const { seen } = await loopStops('pe.py', { condition: 'i == nosuch', hitCondition: '2' });
        assert.strictEqual(seen.length, 10, JSON.stringify(seen));
        assert.ok(/NameError/.test(seen[0].description), seen[0].description);
    },

    // A C++ function breakpoint in torch: pending, bound when torch loads, hit.
    async function_breakpoint() {
        const dc = client();
        const prog = script('fb.py', TORCH_PROGRAM);
        let bp;
        const bound = dc.waitForEvent('breakpoint');
        await launch(dc, { program: prog }, async () => {
            const r = await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: TORCH_ADD }] });
            bp = r.body.breakpoints[0];
            assert.strictEqual(bp.verified, false);
        });
        const { ev, frames } = await stoppedFrames(dc, 'function breakpoint');
        assert.deepStrictEqual(ev.body.hitBreakpointIds, [bp.id]);
        assert.strictEqual((await bound).body.breakpoint.verified, true);
        assert.ok(frames[0].name.startsWith(TORCH_ADD), frames[0].name);
        const py = frames.filter(f => f.source && f.source.path === prog);
        assert.strictEqual(py.length, 1);
        assert.strictEqual(py[0].line, 3);
        const out = dc.assertOutput('stdout', 'x = tensor([2., 2.])\n');
        await dc.continueRequest({ threadId: ev.body.threadId });
        await out;
        await dc.waitForEvent('terminated');
        await dc.stop();
    },

    // A c10 error (a shape mismatch) as an exception breakpoint.
    async exception_breakpoint() {
        const dc = client();
        const prog = script('shape.py', 'import torch\na = torch.ones(2)\nb = torch.ones(3)\n' +
            'try:\n    a + b  # line 5\nexcept RuntimeError as e:\n    print("caught")\n');
        await launch(dc, { program: prog }, dc =>
            dc.setExceptionBreakpointsRequest({ filters: ['c10_error'] }));
        const { ev, frames } = await stoppedFrames(dc, 'exception');
        assert.ok(frames.some(f => f.name.startsWith('c10::detail::torchCheckFail')));
        const py = frames.filter(f => f.source && f.source.path === prog);
        assert.strictEqual(py[0].line, 5);
        // exceptionInfo: torch's type and message, and the stack from the throw site
        const info = (await dc.customRequest('exceptionInfo', { threadId: ev.body.threadId })).body;
        assert.strictEqual(info.exceptionId, 'c10::Error', JSON.stringify(info));
        assert.ok(/size of tensor a \(2\) must match the size of tensor b \(3\)/.test(info.description),
                  info.description);
        assert.ok(/torchCheckFail/.test(info.details.stackTrace), info.details.stackTrace);
        assert.ok(/shape\.py", line 5/.test(info.details.stackTrace), info.details.stackTrace);
        const out = dc.assertOutput('stdout', 'caught\n');
        await dc.continueRequest({ threadId: ev.body.threadId });
        await out;
        await dc.stop();
    },

    // A breakpoint on a line of a .py file stops there.
    async python_breakpoint() {
        const dc = client();
        const prog = script('pb.py', TORCH_PROGRAM);
        await dc.start();
        await dc.hitBreakpoint({ program: prog, python: PYTHON }, { path: prog, line: 3 });
        await dc.stop();
    },

    // From that Python line, stepIn goes down into torch's C++.
    async step_in_to_cpp() {
        const dc = client();
        const prog = script('si.py', TORCH_PROGRAM);
        await dc.start();
        await dc.hitBreakpoint({ program: prog, python: PYTHON }, { path: prog, line: 3 });
        const stepped = dc.waitForEvent('stopped');
        await dc.stepInRequest({ threadId: 1 });
        const { frames } = await stoppedFrames(dc, 'step', stepped);
        assert.ok(!(frames[0].source && frames[0].source.path === prog),
                  'still in Python: ' + frames[0].name);
        assert.ok(frames.some(f => f.source && f.source.path === prog && f.line === 3));
        await dc.stop();
    },

    // Step Into Target: the calls of 'torch.add(a.relu(), 1)', and a step
    // into torch.add's operator (relu runs on the way); the Loaded
    // Scripts view's sources hold the script.
    async step_in_targets() {
        const dc = client();
        const prog = script('sit.py', 'import torch\na = torch.ones(2)\n' +
                            'x = torch.add(a.relu(), 1)  # line 3\nprint("x =", x)\n');
        await dc.start();
        await dc.hitBreakpoint({ program: prog, python: PYTHON }, { path: prog, line: 3 });
        const top = (await dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0];
        const targets = (await dc.customRequest('stepInTargets', { frameId: top.id })).body.targets;
        assert.deepStrictEqual(targets.map(t => t.label), ['a.relu', 'torch.add']);
        const sources = (await dc.customRequest('loadedSources')).body.sources;
        assert.ok(sources.some(s => s.path === prog), 'no ' + prog + ' in loaded sources');
        const stepped = dc.waitForEvent('stopped');
        await dc.stepInRequest({ threadId: 1, targetId: targets[1].id });
        const { frames } = await stoppedFrames(dc, 'step', stepped);
        assert.ok(frames[0].name.startsWith(TORCH_ADD), 'not in torch.add: ' + frames[0].name);
        await dc.stop();
    },

    // stepIn from a Python line into torch's C++ (the binding the line
    // calls), then stepOut: back at the Python line that called it.
    async step_out_back() {
        const dc = client();
        const prog = script('so.py', TORCH_PROGRAM);
        await dc.start();
        await dc.hitBreakpoint({ program: prog, python: PYTHON }, { path: prog, line: 3 });
        let stepped = dc.waitForEvent('stopped');
        await dc.stepInRequest({ threadId: 1 });
        let { frames } = await stoppedFrames(dc, 'step', stepped);
        assert.ok(!(frames[0].source && frames[0].source.path === prog), 'not in C++: ' + frames[0].name);
        stepped = dc.waitForEvent('stopped');
        await dc.stepOutRequest({ threadId: 1 });
        ({ frames } = await stoppedFrames(dc, 'step', stepped));
        assert.strictEqual(frames[0].source && frames[0].source.path, prog, frames[0].name);
        assert.strictEqual(frames[0].line, 3);
        await dc.stop();
    },

    // The Python frame's locals, with a tensor decoded.
    async variables_with_tensors() {
        const dc = client();
        const prog = script('vt.py', TORCH_PROGRAM);
        await launch(dc, { program: prog }, dc =>
            dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: TORCH_ADD }] }));
        const { frames } = await stoppedFrames(dc, 'function breakpoint');
        const py = frames.find(f => f.source && f.source.path === prog);
        const scopes = (await dc.scopesRequest({ frameId: py.id })).body.scopes;
        const vars = (await dc.variablesRequest({
            variablesReference: scopes[0].variablesReference })).body.variables;
        const a = vars.find(v => v.name === 'a');
        assert.ok(a, 'no local a in ' + JSON.stringify(vars));
        assert.ok(/tensor\(\[1\., 1\.\]\)/.test(a.value), a.value);
        assert.ok(a.variablesReference > 0, 'a tensor has parts');
        const parts = (await dc.variablesRequest({
            variablesReference: a.variablesReference })).body.variables;
        const names = parts.map(p => p.name);
        for (const want of ['dtype', 'device'])
            assert.ok(names.some(n => n.includes(want)), want + ' not in ' + names);
        await dc.stop();
    },

    // Attach, stop, disconnect: the process keeps running, untraced.
    async attach_disconnect() {
        const dc = client();
        const pid = Number(process.env.TDAP_TARGET_PID);
        await dc.start();
        const stopped = dc.waitForEvent('stopped');
        await Promise.all([
            dc.waitForEvent('initialized').then(() => dc.configurationDoneRequest()),
            dc.initializeRequest().then(() =>
                dc.attachRequest({ processId: pid, stopOnEntry: true })),
        ]);
        const { frames } = await stoppedFrames(dc, 'entry', stopped);
        assert.ok(frames.some(f => f.source && /target\.py$/.test(f.source.path)));
        await dc.disconnectRequest({});
        dc.stopAdapter();
    },

    // The client dies at a stop, without a word: the adapter ends the session.
    async client_dies() {
        const dc = client();
        const prog = script('cd.py', TORCH_PROGRAM);
        const proc = dc.waitForEvent('process');
        await launch(dc, { program: prog }, dc =>
            dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: TORCH_ADD }] }));
        await stoppedFrames(dc, 'function breakpoint');
        note({ program: (await proc).body.systemProcessId, adapter: dc._adapterProcess.pid });
        process.exit(0); // no disconnect: the adapter sees its input end
    },
};

async function main() {
    const name = process.argv[2];
    if (!scenarios[name]) {
        console.error('usage: node scenarios.js ' + Object.keys(scenarios).join('|'));
        process.exit(2);
    }
    try {
        await scenarios[name]();
        console.log('ok ' + name);
        process.exit(0);
    } catch (e) {
        console.error('FAILED ' + name + ': ' + (e && e.stack ? e.stack : e));
        process.exit(1);
    }
}

main();
