"""Taskcluster's JavaScript client (`taskcluster-client` from npm, what a Node service or a
decision task in JavaScript uses) against a real host: its Hawk signatures, temporary
credentials, signed URLs, upload and download helpers, bodies and error codes work as the
Python client's do."""

from __future__ import annotations

import json
import subprocess

import pytest
import requests

from tests.conftest import ROOT, ROOT_CREDENTIALS

VERSION = "87.1.3"
PACKAGE = ROOT / ".tools" / "node_modules" / "taskcluster-client"

SCRIPT = r"""
const tcm = require('taskcluster-client');
const tc = {...tcm.clients, slugid: tcm.slugid, fromNowJSON: tcm.fromNowJSON};
const options = {rootUrl: process.env.ROOT_URL, credentials: JSON.parse(process.env.CREDENTIALS)};
const outcome = {};
(async () => {
  const queue = new tc.Queue(options);
  const taskId = tc.slugid(), taskQueueId = 'js-client/' + process.env.QUEUE_SUFFIX;
  outcome.created = (await queue.createTask(taskId, {
    taskQueueId, created: tc.fromNowJSON(), deadline: tc.fromNowJSON('1 hour'), payload: {},
    metadata: {name: 'js', description: 'from the JavaScript client', owner: 'js@example.com',
               source: 'https://example.com/js'}})).status.state;
  const [run] = (await queue.claimWork(taskQueueId, {workerGroup: 'js', workerId: 'w1', tasks: 1})).tasks;
  const worker = new tc.Queue({rootUrl: options.rootUrl, credentials: run.credentials});
  await worker.createArtifact(taskId, run.runId, 'private/ref', {
    storageType: 'reference', url: 'https://example.com/ref', expires: tc.fromNowJSON('1 day'),
    contentType: 'text/plain'});
  // An object artifact through the client's upload and download helpers (hashes checked).
  const bytes = Buffer.from('bytes from the JavaScript client\n'.repeat(1000));
  const object = await worker.createArtifact(taskId, run.runId, 'public/bytes.txt', {
    storageType: 'object', expires: tc.fromNowJSON('1 day'), contentType: 'text/plain'});
  await tcm.upload({projectId: object.projectId, name: object.name, contentType: 'text/plain',
    contentLength: bytes.length, expires: new Date(object.expires), uploadId: object.uploadId,
    object: new tc.Object({rootUrl: options.rootUrl, credentials: object.credentials}),
    streamFactory: async () => require('stream').Readable.from([bytes])});
  await worker.finishArtifact(taskId, run.runId, 'public/bytes.txt', {uploadId: object.uploadId});
  const chunks = [];
  await tcm.downloadArtifact({taskId, runId: run.runId, name: 'public/bytes.txt', queue,
    streamFactory: async () => new (require('stream').Writable)({write(chunk, _, done) { chunks.push(chunk); done(); }})});
  outcome.downloaded = Buffer.concat(chunks).equals(bytes);
  outcome.completed = (await worker.reportCompleted(taskId, run.runId)).status.state;
  outcome.artifacts = (await queue.listArtifacts(taskId, run.runId)).artifacts.map(a => a.name).sort();
  outcome.signedUrl = queue.buildSignedUrl(queue.getArtifact, taskId, run.runId, 'private/ref');
  const temporary = tcm.createTemporaryCredentials({
    start: new Date(Date.now() - 60000), expiry: new Date(Date.now() + 3600000),
    scopes: ['queue:get-task:*', 'auth:current-scopes'], credentials: options.credentials});
  outcome.temporaryScopes = (await new tc.Auth({rootUrl: options.rootUrl, credentials: temporary})
    .currentScopes()).scopes;
  const secrets = new tc.Secrets(options);
  await secrets.set('js-client/' + taskId, {secret: {answer: 42}, expires: tc.fromNowJSON('1 hour')});
  outcome.secret = (await secrets.get('js-client/' + taskId)).secret;
  for (const [name, call] of [['unknown', () => queue.task(tc.slugid())],
                              ['refused', () => new tc.Queue({rootUrl: options.rootUrl}).cancelTask(taskId)]]) {
    try { await call(); outcome[name] = 'answered'; } catch (e) { outcome[name] = [e.statusCode, e.code]; }
  }
  console.log(JSON.stringify(outcome));
})().catch(e => { console.error(e); process.exit(1); });
"""


@pytest.fixture(scope="module")
def js_client() -> None:
    if not PACKAGE.exists():
        subprocess.run(["npm", "install", "--prefix", str(ROOT / ".tools"), "--no-audit", "--no-fund",
                        "--loglevel=error", f"taskcluster-client@{VERSION}"], check=True, timeout=300)


def test_the_javascript_client_runs_a_task_and_calls_the_other_services(js_client, server, task_queue_id):
    env = {"ROOT_URL": server.root_url, "CREDENTIALS": json.dumps(ROOT_CREDENTIALS),
           "QUEUE_SUFFIX": task_queue_id.split("/", 1)[1], "NODE_PATH": str(ROOT / ".tools" / "node_modules"),
           "PATH": "/usr/local/bin:/usr/bin:/bin"}
    done = subprocess.run(["node", "-e", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["created"], outcome["completed"]) == ("pending", "completed")
    assert outcome["artifacts"] == ["private/ref", "public/bytes.txt", "public/results.json"]
    assert outcome["downloaded"] is True
    # The temporary credentials carry their own scopes (with the anonymous ones every caller
    # has), not their issuer's `*`.
    assert {"auth:current-scopes", "queue:get-task:*"} <= set(outcome["temporaryScopes"])
    assert "*" not in outcome["temporaryScopes"] and "queue:create-task:*" not in outcome["temporaryScopes"]
    assert outcome["secret"] == {"answer": 42}
    assert outcome["unknown"] == [404, "ResourceNotFound"]
    assert outcome["refused"] == [403, "InsufficientScopes"]
    # The bewit the client signed is taken: the private artifact redirects to its URL.
    answer = requests.get(outcome["signedUrl"], allow_redirects=False, timeout=10)
    assert (answer.status_code, answer.headers["location"]) == (303, "https://example.com/ref")
