// Loaded into Azurite (NODE_OPTIONS=--require) by devhost/azurite.py when Azurite keeps its
// data on disk, as `make run`'s does.
//
// Azurite keeps each service's data in one LokiJS database and, while it changes, writes the
// whole of it to a JSON file every 5 seconds. That costs in proportion to everything stored
// so far: measured here with 22,000 finished tasks kept (138 MB), each save took about 0.9 s
// of Azurite's time, and a 2,002-task graph cost Azurite 11.9 ms of CPU a task against 7.4
// with saves a minute apart, so a long-lived `make run` grew slower with every task it had
// ever run. Saves are spaced to AZURITE_SAVE_SECONDS (60 by default); Azurite still saves on
// a graceful stop (SIGTERM or SIGINT, as devhost stops it, even when devhost is killed), so
// only a kill of Azurite itself loses changes, those since the last save.
"use strict";

const Module = require("module");

const seconds = Number(process.env.AZURITE_SAVE_SECONDS) || 60;
const load = Module._load;
let spaced = null;

function spacedSaves(Loki) {
  class SpacedSaves extends Loki {
    constructor(filename, options) {
      const spacedOptions = options && options.autosave ? { ...options, autosaveInterval: seconds * 1000 } : options;
      super(filename, spacedOptions);
      if (spacedOptions !== options) {
        console.log(`[devhost] ${filename}: saved every ${seconds} s and when Azurite stops`);
      }
    }
  }
  return SpacedSaves;
}

Module._load = function (request, ...rest) {
  const exported = load.call(this, request, ...rest);
  if (request !== "lokijs") {
    return exported;
  }
  spaced = spaced || spacedSaves(exported);
  return spaced;
};
