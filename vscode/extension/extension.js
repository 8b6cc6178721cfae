// tdebug's VS Code extension: the debug type is declarative (package.json);
// this only adds the command 'tdebug.pickProcess', which an attach
// configuration's "${command:pickProcess}" runs (the debugger contribution's
// "variables"): a list of the Python processes 'tdebug ps' finds, whose
// answer is the pid picked (undefined cancels the attach).
'use strict';

const path = require('path');
const vscode = require('vscode');
const pick = require('./pick');

function activate(context) {
    const tdebug = path.join(context.extensionPath, 'bin', 'tdebug');
    context.subscriptions.push(vscode.commands.registerCommand('tdebug.pickProcess', async () => {
        let choices;
        try {
            choices = await pick.list(tdebug, process.pid);
        } catch (e) {
            vscode.window.showErrorMessage(`tdebug: ${e.message}`);
            return undefined;
        }
        if (!choices.length) {
            vscode.window.showErrorMessage("tdebug: no Python process to attach to ('tdebug ps " +
                                           "--all' also lists the ones tdebug cannot attach to, " +
                                           'and why)');
            return undefined;
        }
        const chosen = await vscode.window.showQuickPick(choices, {
            placeHolder: 'The Python process to attach to (tdebug ps)',
            matchOnDescription: true,
            matchOnDetail: true,
        });
        return chosen ? chosen.pid : undefined;
    }));
}

function deactivate() {}

module.exports = { activate, deactivate };
