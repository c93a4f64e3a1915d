/** The public API object, typed by the published declarations (elements/elements.d.ts). */
import type PublicApi from '../../elements';
import { VERSION, init } from './vault-elements';

export const VaultElements: typeof PublicApi = Object.freeze({
  init: init as unknown as typeof PublicApi.init,
  version: VERSION,
});
