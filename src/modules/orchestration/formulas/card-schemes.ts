/** The scheme a transaction or stored card shows for a token's card brand: the vault's card rules decide. */
export { schemeOf } from '../../tokens/data/card-rules';
