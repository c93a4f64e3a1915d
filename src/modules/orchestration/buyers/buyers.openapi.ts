import { ApiDocs } from '../../../common/api-docs.decorator';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { BuyerDto, BuyerPageDto, StoredPaymentMethodDto } from './buyer.dto';

/**
 * The OpenAPI description of the buyers routes, one decorator per route, so that the controller
 * reads as routing only.
 */

/** The request and answer of each route, by the controller's method name. */
export const BuyersApi = {
  create: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'createBuyer',
        summary: 'Create a buyer',
        description: '`external_identifier` is unique in the tenant: a second buyer with it is a 409.',
      }),
      ApiCreatedResponse({ type: BuyerDto }),
    ),
  list: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listBuyers',
        summary: 'List buyers, newest first',
        description:
          '`search` matches the start of the display name or of the external identifier, in any case.',
      }),
      ApiOkResponse({ type: BuyerPageDto }),
    ),
  get: () =>
    ApiDocs(
      ApiOperation({ operationId: 'getBuyer', summary: 'Get a buyer' }),
      ApiOkResponse({ type: BuyerDto }),
    ),
  update: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'updateBuyer',
        summary: 'Update a buyer',
        description:
          'A field left out keeps its value; `null` clears it. A taken `external_identifier` is a 409.',
      }),
      ApiOkResponse({ type: BuyerDto }),
    ),
  delete: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteBuyer',
        summary: 'Delete a buyer',
        description:
          'Its stored cards are removed from it (the tokens stay); its transactions keep showing it.',
      }),
      ApiNoContentResponse(),
    ),
  store: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'storeBuyerPaymentMethod',
        summary: 'Store a card token for the buyer',
        description:
          'Needs `token:use` on the card token. 201 with the stored card; 200 with the one already stored when the ' +
          'buyer has this card (the same fingerprint). A token stored for another buyer is a 409. Counted by the ' +
          'card enumeration guard as a read that shows the fingerprint would be.',
      }),
      ApiCreatedResponse({ type: StoredPaymentMethodDto }),
      ApiOkResponse({ type: StoredPaymentMethodDto, description: 'The buyer already had this card' }),
    ),
  listMethods: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'listBuyerPaymentMethods',
        summary: "The buyer's stored cards (a plain array), most recently used first",
        description:
          'Never used: most recently added first. This order is the one a transaction with `buyer_id` and no `token` charges the first of.',
      }),
      ApiOkResponse({ type: [StoredPaymentMethodDto] }),
    ),
  detach: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'deleteBuyerPaymentMethod',
        summary: 'Remove a stored card from the buyer (the token stays)',
      }),
      ApiNoContentResponse(),
    ),
  setConnectionTokens: () =>
    ApiDocs(
      ApiOperation({
        operationId: 'setBuyerPaymentMethodConnectionTokens',
        summary: "Set the processors' tokens of a stored card (the whole list)",
        description:
          'Each entry names a connection of the tenant and the token its processor holds for the card; a ' +
          'merchant-initiated payment with the card at that connection sends the token instead of the card. ' +
          'The list replaces the one stored (empty clears it). Tokens are stored sealed and answered masked.',
      }),
      ApiOkResponse({ type: StoredPaymentMethodDto }),
    ),
};
