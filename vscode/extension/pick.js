// The process picker's list ('tdebug.pickProcess', the attach
// configuration's "${command:pickProcess}"): the Python processes
// 'tdebug ps --json' finds, as QuickPick items.  No 'vscode' here, so that
// node alone runs it (tests/e2e/test_vscode_pick.py).
'use strict';

const { execFile } = require('child_process');

// A QuickPick item for one process of 'tdebug ps --json': the label says
// what runs, the description its pid and what tdebug knows of it, the
// detail its whole command line.
function item(p) {
    const cmd = Array.isArray(p.command) ? p.command : [];
    const oneLine = (s) => s.replace(/\s+/g, ' ').trim();
    // What runs: the script's name, '-m MODULE', '-c CODE' (its start).
    let runs = cmd.slice(1).find((a) => !a.startsWith('-')) || cmd[0] || '?';
    const opt = cmd.findIndex((a, i) => i > 0 && (a === '-m' || a === '-c'));
    if (opt > 0 && opt + 1 < cmd.length && cmd.slice(1, opt).every((a) => a.startsWith('-')))
        runs = `${cmd[opt]} ${oneLine(cmd[opt + 1]).slice(0, 60)}`;
    else
        runs = runs.split('/').pop();
    const what = [`pid ${p.pid}`];
    if (p.torch)
        what.push('torch');
    if (p.job && p.job.role === 'rank' && p.job.rank !== undefined && p.job.rank !== null)
        what.push(`rank ${p.job.rank}`);
    else if (p.job && p.job.role)
        what.push(p.job.role);
    if (p.role && p.role !== 'plain')
        what.push(p.role);
    if (p.user)
        what.push(p.user);
    return {
        label: `${p.comm || 'python'} ${runs}`,
        description: what.join(' · '),
        detail: oneLine(cmd.join(' ')).slice(0, 300),
        pid: String(p.pid),
    };
}

// The items of the processes in PS (the parsed JSON) that tdebug can
// attach to, the ones running torch first, then by pid; the picker's own
// process is left out (OWN: a pid).
function items(ps, own) {
    return (ps.processes || [])
        .filter((p) => (!p.attach || p.attach.ok) && p.pid !== own)
        .sort((a, b) => (b.torch ? 1 : 0) - (a.torch ? 1 : 0) || a.pid - b.pid)
        .map(item);
}

// Run TDEBUG ps --json: a promise of the items, or an Error saying why.
function list(tdebug, own) {
    return new Promise((resolve, reject) => {
        execFile(tdebug, ['ps', '--json'], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
            if (err) {
                reject(new Error(`'${tdebug} ps --json' failed: ${(stderr || err.message).trim()}`));
                return;
            }
            try {
                resolve(items(JSON.parse(stdout), own));
            } catch (e) {
                reject(new Error(`'${tdebug} ps --json' printed no JSON: ${e.message}`));
            }
        });
    });
}

module.exports = { item, items, list };
