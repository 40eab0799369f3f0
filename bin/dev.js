#!/usr/bin/env node
// CommonJS, as every file of bin/ (bin/package.json: see bin/run.js). oclif finds the package from its root.
'use strict'
require('@oclif/core').execute({development: true, dir: require('node:path').join(__dirname, '..')})
