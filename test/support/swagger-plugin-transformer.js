// Applies the @nestjs/swagger CLI plugin under ts-jest, with the options nest-cli.json gives `nest build`,
// so that the document served in tests is the one the built service serves.
const plugin = require('@nestjs/swagger/plugin');
const nestCli = require('../../nest-cli.json');

const options = nestCli.compilerOptions.plugins.find((p) => p.name === '@nestjs/swagger').options;

module.exports = {
  name: 'nestjs-swagger-transformer',
  version: 1,
  factory: (compiler) => plugin.before(options, compiler.program),
};
