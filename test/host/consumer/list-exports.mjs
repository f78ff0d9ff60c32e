// Imports the built package by its own name (Node's self-reference through `exports`) and prints what it exports.
import * as lib from 'keys-usage-identity';

process.stdout.write(JSON.stringify(Object.keys(lib).sort()));
