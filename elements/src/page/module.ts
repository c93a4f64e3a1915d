/** elements.mjs: the ES module, `import VaultElements from '.../elements/v1/elements.mjs'`. */
import { VaultElements } from './api';

export default VaultElements;
