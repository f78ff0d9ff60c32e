import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';

/**
 * What a request spends once its credential and scopes are accepted: a port that auth declares
 * and budgets/ implements (the root module binds the one to the other), so the auth decorators
 * enforce a key's budgets without auth knowing how they are kept. Auth only authenticates.
 */
export abstract class RequestBudget {
  /** True when the request may go on; throws the refusal (403 for a network, 429 for a budget). */
  abstract admit(ctx: ExecutionContext): boolean | Promise<boolean>;
}

/** Last of the auth decorators' guards: hands the request to the bound RequestBudget. */
@Injectable()
export class RequestBudgetGuard implements CanActivate {
  constructor(private readonly budget: RequestBudget) {}

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    return this.budget.admit(ctx);
  }
}
