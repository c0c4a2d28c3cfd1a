// Ask a name server for topic routes with ali-ons' own MQClientAPI (its remoting layer,
// JSON2 body parsing included) and print what ali-ons made of the answers as one JSON line.
'use strict';

const path = require('path');

const nodeDir = process.env.ALIONS_NODE_DIR;
const MQClientAPI = require(path.join(nodeDir, 'node_modules', 'ali-ons', 'lib', 'mq_client_api'));

const silent = { info() {}, warn() {}, debug() {}, error() {} };

async function main() {
  const [ nameSrv, topic, missingTopic ] = process.argv.slice(2);
  const api = new MQClientAPI({ nameSrv, httpclient: {}, logger: silent, responseTimeout: 5000 });
  await api.ready();
  const route = await api.getTopicRouteInfoFromNameServer(topic, 3000);
  let missing = null;
  try {
    await api.getTopicRouteInfoFromNameServer(missingTopic, 3000);
    missing = { code: 'no error' };
  } catch (err) {
    missing = { code: err.code, name: err.name, message: err.message };
  }
  await api.close();
  process.stdout.write(JSON.stringify({ route, missing }) + '\n');
}

main().catch(err => {
  process.stderr.write(`ali-ons failed: ${err.stack || err}\n`);
  process.exit(1);
});
