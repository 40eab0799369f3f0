#!/usr/bin/env node
import {execute} from '@oclif/core'

await execute({development: true, dir: import.meta.url})
